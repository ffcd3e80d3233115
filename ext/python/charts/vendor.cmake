# Vendors the serve page's charting library (Chart.js) for the Python package: `npm ci` installs the version pinned,
# with its integrity, in package-lock.json; its UMD bundle, license and version are copied to OUT, where
# ext/python/build_backend.py takes them into the wheel (nsystrace/vendor/). No CDN: the page loads the library from
# its own server, so it works offline.
#
# Never fails the build: without npm, or when `npm ci` fails (offline with an empty npm cache), OUT holds
# charts-missing.txt saying why, the build prints a warning, and the page works without its charts and shows why.
# Up to date when OUT holds the bundle made from this package-lock.json; a failed attempt is retried next build.
#   cmake -DSOURCE=ext/python/charts -DOUT=build/page_charts [-DNPM=/path/to/npm] -P vendor.cmake
cmake_minimum_required(VERSION 3.18)
file(SHA256 "${SOURCE}/package-lock.json" lock_sha)
if(EXISTS "${OUT}/chart.umd.min.js" AND EXISTS "${OUT}/lock.sha256")
  file(READ "${OUT}/lock.sha256" vendored_sha)
  if(vendored_sha STREQUAL lock_sha)
    return()
  endif()
endif()
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")

function(without_charts why)
  file(WRITE "${OUT}/charts-missing.txt" "${why}\n")
  message(WARNING "nsystrace: the serve page is built without its charts: ${why}")
endfunction()

if(NOT NPM)
  find_program(NPM npm)
endif()
if(NOT NPM OR NOT EXISTS "${NPM}")
  without_charts("npm was not found when nsystrace was built, so its charting library (Chart.js, from npm) \
could not be vendored; install npm (Debian: apt-get install npm) and reinstall the package (pip install .)")
  return()
endif()

file(COPY "${SOURCE}/package.json" "${SOURCE}/package-lock.json" DESTINATION "${OUT}/npm")
# --ignore-scripts: nothing of the package runs here; few retries: an offline build gives up in seconds.
execute_process(COMMAND "${NPM}" ci --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error
                        --fetch-retries=1 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=5000
                WORKING_DIRECTORY "${OUT}/npm" RESULT_VARIABLE npm_result OUTPUT_QUIET ERROR_VARIABLE npm_error
                TIMEOUT 300)
set(package "${OUT}/npm/node_modules/chart.js")
if(NOT npm_result EQUAL 0 OR NOT EXISTS "${package}/dist/chart.umd.min.js")
  string(REGEX REPLACE "\n.*" "" npm_error "${npm_error}")  # npm's first line names the problem
  without_charts("`npm ci` failed when nsystrace was built (${npm_result}: ${npm_error}), so its charting \
library (Chart.js, from npm) could not be vendored; reinstall the package (pip install .) when npm can reach its \
registry")
  file(REMOVE_RECURSE "${OUT}/npm")
  return()
endif()
file(READ "${package}/package.json" manifest)
string(JSON version GET "${manifest}" version)
configure_file("${package}/dist/chart.umd.min.js" "${OUT}/chart.umd.min.js" COPYONLY)
configure_file("${package}/LICENSE.md" "${OUT}/chart.js-LICENSE.md" COPYONLY)
file(WRITE "${OUT}/chart.js-version.txt" "${version}\n")
file(WRITE "${OUT}/lock.sha256" "${lock_sha}")
file(REMOVE_RECURSE "${OUT}/npm")
message(STATUS "nsystrace: the serve page's charting library: Chart.js ${version} (npm ci, from package-lock.json)")
