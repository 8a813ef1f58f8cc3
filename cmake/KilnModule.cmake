# kiln_module(NAME DEPS ... [SUBDIRS ...] [TEST_PROPERTIES ...]): one static library per folder
# under src/kiln/, built from every .cpp beside this CMakeLists.txt (and in the SUBDIRS named, a
# module's stages), and one GoogleTest binary from every *_test.cpp among them.
# New files need no CMake edit; new dependencies go into DEPS; TEST_PROPERTIES are ctest
# properties of every test of the module (a fixture, an environment).
function(kiln_module name)
  cmake_parse_arguments(M "" "" "DEPS;TEST_DEPS;SUBDIRS;TEST_PROPERTIES" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(subdir ${M_SUBDIRS})
    file(GLOB subdir_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${subdir}/*.cpp)
    list(APPEND sources ${subdir_sources})
  endforeach()
  set(tests ${sources})
  list(FILTER sources EXCLUDE REGEX "_test\\.cpp$")
  list(FILTER tests INCLUDE REGEX "_test\\.cpp$")
  if(sources)
    add_library(kiln_${name} STATIC ${sources})
    target_include_directories(kiln_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(kiln_${name} PUBLIC ${M_DEPS})
  else()
    add_library(kiln_${name} INTERFACE)
    target_include_directories(kiln_${name} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(kiln_${name} INTERFACE ${M_DEPS})
  endif()
  if(tests)
    add_executable(kiln_${name}_test ${tests})
    target_link_libraries(kiln_${name}_test PRIVATE kiln_${name} ${M_TEST_DEPS}
                          GTest::gmock GTest::gtest_main)
    target_compile_definitions(kiln_${name}_test PRIVATE
                               KILN_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                               KILN_BINARY_DIR="${PROJECT_BINARY_DIR}")
    gtest_discover_tests(kiln_${name}_test DISCOVERY_MODE PRE_TEST
                         PROPERTIES LABELS unit ${M_TEST_PROPERTIES})
  endif()
endfunction()
