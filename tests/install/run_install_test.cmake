# cmake -DBUILD_DIR=... -DEXAMPLE_DIR=... -DWORK_DIR=... -DGENERATOR=... -P run_install_test.cmake
foreach(var BUILD_DIR EXAMPLE_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_install_test.cmake: ${var} not set")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${step} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

# Only what the SDK needs, so the test does not depend on every binary of
# the tree being built: the SDK component (client library, headers, CMake
# package) and the protocol folder (ringserve_common, ringserve_protocol and
# their headers, which share the package's export set).
run("install sdk" ${CMAKE_COMMAND} --install ${BUILD_DIR} --component sdk --prefix ${prefix})
run("install protocol" ${CMAKE_COMMAND} --install ${BUILD_DIR}/protocol --prefix ${prefix})
foreach(expected
    include/ringserve/client/client.h
    include/ringserve/protocol/messages.h
    include/ringserve/common/expected.h
    lib/cmake/ringserve/ringserveConfig.cmake
    lib/cmake/ringserve/ringserveConfigVersion.cmake)
  if(NOT EXISTS ${prefix}/${expected})
    message(FATAL_ERROR "install tree lacks ${expected}")
  endif()
endforeach()

set(compiler_arg "")
if(CXX_COMPILER)
  set(compiler_arg -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
run("configure example" ${CMAKE_COMMAND} -S ${EXAMPLE_DIR} -B ${WORK_DIR}/example -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix} ${compiler_arg})
run("build example" ${CMAKE_COMMAND} --build ${WORK_DIR}/example)
run("run example" ${WORK_DIR}/example/sdk_example ${WORK_DIR}/no-server-here.sock)
if(NOT last_output MATCHES "sdk_example: ok")
  message(FATAL_ERROR "example printed:\n${last_output}")
endif()
message(STATUS "${last_output}")
