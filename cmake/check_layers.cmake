# The one-way rule between the folders of src/ (docs/style.md, "Where things
# live"):
#
#   cli  ->  report  ->  io  ->  core
#
# A file includes its own folder and the folders to its right: io/ (readers
# and the atomic writer) never includes a printer or a flag, report/ (the
# printers) never includes cli/. The core's own wings are checked by
# check_core_wings.cmake. A command's result struct (a `struct ...Result` or
# `struct ...Report`) is declared in core, where the command computes it,
# never in report/: printers take core's results, they do not define them.
# A file under cli/ is at most 300 lines: flags in, a recipe of calls, a
# printer out; what is longer belongs in a layer to its right.
# Run by CTest as `src_layers_rule`:
#
#   cmake -DSRC_DIR=<path to src> -P cmake/check_layers.cmake

cmake_minimum_required(VERSION 3.22)

if(NOT SRC_DIR)
  message(FATAL_ERROR "check_layers: pass -DSRC_DIR=<path to src>")
endif()
get_filename_component(SRC_DIR "${SRC_DIR}" ABSOLUTE)

set(rank_core 0)
set(rank_io 1)
set(rank_report 2)
set(rank_cli 3)
set(layers core io report cli)

set(violations 0)
file(GLOB_RECURSE files RELATIVE "${SRC_DIR}" "${SRC_DIR}/*.hpp" "${SRC_DIR}/*.cpp")
list(SORT files)
foreach(file IN LISTS files)
  string(REGEX MATCH "^[^/]+" from "${file}")
  if(NOT from IN_LIST layers)
    continue()
  endif()
  file(STRINGS "${SRC_DIR}/${file}" lines)
  list(LENGTH lines line_count)
  if(from STREQUAL "cli" AND line_count GREATER 300)
    message("src/${file}: ${line_count} lines; a file under cli/ is at most 300 (move what is not flags into core/, io/ or report/)")
    math(EXPR violations "${violations} + 1")
  endif()
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(from STREQUAL "report" AND line MATCHES "^[ \t]*struct[ \t]+[A-Za-z0-9_]*(Result|Report)[ \t]*[{:]")
      message("src/${file}:${number}: declares a result struct in report/; results live in core, printers take them")
      math(EXPR violations "${violations} + 1")
    endif()
    if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([a-z]+)/")
      continue()
    endif()
    set(to "${CMAKE_MATCH_1}")
    if(NOT to IN_LIST layers)
      continue()
    endif()
    if(rank_${to} GREATER rank_${from})
      message("src/${file}:${number}: ${from}/ includes ${to}/; the layers include only to their right (cli -> report -> io -> core)")
      math(EXPR violations "${violations} + 1")
    endif()
  endforeach()
endforeach()

list(LENGTH files count)
if(violations GREATER 0)
  message(FATAL_ERROR "check_layers: ${violations} line(s) break the layering in ${SRC_DIR}")
endif()
message("check_layers: ${count} files, every include points cli -> report -> io -> core")
