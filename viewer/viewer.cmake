# Bundles the viewer page at build time (viewer/build.mjs inlines dagre from node_modules and our
# JS/CSS into one template) and compiles it into cg_viewer as a generated header.
# Included from the root CMakeLists.txt after cg_viewer is defined.
find_program(CG_NODE node)
set(_cg_viewer_gen ${CMAKE_BINARY_DIR}/generated/viewer)
set(_cg_dagre ${PROJECT_SOURCE_DIR}/node_modules/@dagrejs/dagre/dist/dagre.min.js)
if(CG_NODE AND EXISTS ${_cg_dagre} AND TARGET cg_viewer)
  file(GLOB _cg_viewer_web CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/src/*)
  add_custom_command(
    OUTPUT ${_cg_viewer_gen}/cg_viewer_template.hpp
    COMMAND ${CG_NODE} ${CMAKE_CURRENT_LIST_DIR}/build.mjs --header ${_cg_viewer_gen}/cg_viewer_template.hpp
    DEPENDS ${_cg_viewer_web} ${CMAKE_CURRENT_LIST_DIR}/build.mjs ${_cg_dagre}
    COMMENT "Bundling the HTML viewer (viewer/build.mjs)"
    VERBATIM)
  add_custom_target(cg_viewer_bundle DEPENDS ${_cg_viewer_gen}/cg_viewer_template.hpp)
  add_dependencies(cg_viewer cg_viewer_bundle)
  target_include_directories(cg_viewer PRIVATE ${_cg_viewer_gen})
  target_compile_definitions(cg_viewer PRIVATE CG_VIEWER_BUNDLED=1)
  # Optional: big payloads are embedded gzip+base64 (Debian zlib1g-dev).
  find_package(ZLIB QUIET)
  if(ZLIB_FOUND)
    target_link_libraries(cg_viewer PRIVATE ZLIB::ZLIB)
    target_compile_definitions(cg_viewer PRIVATE CG_VIEWER_ZLIB=1)
  endif()
else()
  message(WARNING "candle-graph: node or node_modules/@dagrejs/dagre missing (run scripts/setup.sh); "
                  "the HTML viewer will not be bundled and `view` will report it")
endif()
