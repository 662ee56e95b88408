# The Rust grammar comes from the npm package tree-sitter-rust@0.23.3 (ABI 14), installed by
# scripts/setup.sh into node_modules; we compile its generated C sources against Debian's
# libtree-sitter (runtime 0.20.7, loads ABI 13-14). Nothing of it is committed.
set(CG_GRAMMAR_DIR ${CMAKE_CURRENT_SOURCE_DIR}/node_modules/tree-sitter-rust/src)
if(NOT EXISTS ${CG_GRAMMAR_DIR}/parser.c)
  message(FATAL_ERROR "tree-sitter-rust grammar not found at ${CG_GRAMMAR_DIR}; run scripts/setup.sh (or make setup)")
endif()
add_library(cg_grammar STATIC ${CG_GRAMMAR_DIR}/parser.c ${CG_GRAMMAR_DIR}/scanner.c)
target_include_directories(cg_grammar PRIVATE ${CG_GRAMMAR_DIR})
set_target_properties(cg_grammar PROPERTIES C_STANDARD 11)
target_compile_options(cg_grammar PRIVATE -w)
