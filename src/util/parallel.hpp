#pragma once
// Runs `work(i)` for i in [0, n) on up to one thread per core (the calling thread among them),
// each index once; afterwards rethrows the exception of the lowest index that threw, so the error
// reported is the first in the order given whatever the threads' timing. Used to read several
// trace files at once (`read_traces`, `compare`).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace cg {

template <typename Work>
void for_each_index_in_parallel(std::size_t n, Work&& work) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  auto run = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        work(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const std::size_t workers =
      std::min<std::size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < workers; ++i)
    threads.emplace_back(run);
  run();
  for (auto& t : threads)
    t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace cg
