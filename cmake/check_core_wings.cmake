# The one-way rule of src/core/ (docs/style.md, "Where things live"):
#
#   root  <-  model/  <-  memory/  <-  speed/  <-  gate/  <-  plan/
#                                           <-  sim/   <-
#
# A file may include the shared root files, its own wing and the wings to its
# left; gate/ and sim/ sit side by side and do not include each other; plan/
# (engine set-up and the search) sits above both. The
# root includes no wing, and nothing in src/core/ includes io/, cli/ or the
# kernels. Run by CTest as `core_wings_include_rule`:
#
#   cmake -DCORE_DIR=<path to src/core> -P cmake/check_core_wings.cmake
#
# It prints every offending line (file:line: what it includes and why that
# is not allowed) and fails when there is one.

cmake_minimum_required(VERSION 3.22)

if(NOT CORE_DIR)
  message(FATAL_ERROR "check_core_wings: pass -DCORE_DIR=<path to src/core>")
endif()
get_filename_component(CORE_DIR "${CORE_DIR}" ABSOLUTE)
if(NOT IS_DIRECTORY "${CORE_DIR}")
  message(FATAL_ERROR "check_core_wings: ${CORE_DIR} is not a folder")
endif()

# The wings and their rank; a file may include wings of a lower rank.
set(rank_root 0)
set(rank_model 1)
set(rank_memory 2)
set(rank_speed 3)
set(rank_gate 4)
set(rank_sim 4)
set(rank_plan 5)
set(known_wings model memory speed gate sim plan)

# The wing a path below src/core/ belongs to ("root" for a file at the top).
function(wing_of relative out)
  string(FIND "${relative}" "/" slash)
  if(slash EQUAL -1)
    set(${out} root PARENT_SCOPE)
  else()
    string(SUBSTRING "${relative}" 0 ${slash} first)
    set(${out} ${first} PARENT_SCOPE)
  endif()
endfunction()

set(violations 0)
file(GLOB_RECURSE files RELATIVE "${CORE_DIR}" "${CORE_DIR}/*.hpp" "${CORE_DIR}/*.cpp" "${CORE_DIR}/*.h")
list(SORT files)
foreach(file IN LISTS files)
  wing_of("${file}" from)
  if(NOT from STREQUAL "root" AND NOT from IN_LIST known_wings)
    message("src/core/${file}: folder '${from}' is not a wing (expected one of: ${known_wings})")
    math(EXPR violations "${violations} + 1")
    continue()
  endif()
  file(STRINGS "${CORE_DIR}/${file}" lines)
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")
      continue()
    endif()
    set(target "${CMAKE_MATCH_1}")
    if(NOT target MATCHES "^core/(.+)$")
      message("src/core/${file}:${number}: includes \"${target}\"; the core includes only core/ headers (no io/, cli/ or kernels)")
      math(EXPR violations "${violations} + 1")
      continue()
    endif()
    wing_of("${CMAKE_MATCH_1}" to)
    if(to STREQUAL from)
      continue()
    endif()
    if(NOT to STREQUAL "root" AND NOT to IN_LIST known_wings)
      message("src/core/${file}:${number}: includes \"${target}\", which is in no wing")
      math(EXPR violations "${violations} + 1")
      continue()
    endif()
    if(NOT rank_${to} LESS rank_${from})
      message("src/core/${file}:${number}: ${from} includes \"${target}\" from ${to}; a wing includes only the root and the wings below it (model <- memory <- speed <- gate, sim <- plan)")
      math(EXPR violations "${violations} + 1")
    endif()
  endforeach()
endforeach()

list(LENGTH files count)
if(violations GREATER 0)
  message(FATAL_ERROR "check_core_wings: ${violations} include(s) break the one-way rule in ${CORE_DIR}")
endif()
message("check_core_wings: ${count} files, every include follows the one-way rule")
