#pragma once
// One bounded query, as the CLI and the MCP server both receive it.
#include <cstddef>
#include <string>

namespace cg::query {

struct QueryRequest {
  std::string kind;      // canonical kind ("summary", "parameters", …)
  std::string selector;  // empty = none
  std::string to;        // `path` only
  std::size_t limit = 100;
  std::size_t offset = 0;
  // MCP only: the model to answer about (a `--root` and a `--config`), empty for the session's;
  // and where a text answer longer than one tool result continues.
  std::string root, config;
  std::size_t text_offset = 0;
  // `summary-table`: a row per weight, and the columns unknown on every row.
  bool weights = false, all_columns = false;
  // `memory`: the context (0: config.json's max_position_embeddings), batch, dtype ("": the
  // config's) and a device size to fit ("24GiB"; "": no fit).
  std::uint64_t context = 0, batch = 1;
  std::string dtype, device_memory;
};

}  // namespace cg::query
