# What `--version` reports: the project version and build type (known at configure time) and the
# source commit, captured at every build so that a rebuild after a commit never reports the old
# one. The commit lands in one generated source, rewritten only when it changes, so an unchanged
# tree rebuilds nothing. -DCUIMG_GIT_COMMIT=... names it where there is no .git (the Docker build
# context leaves it out).
set(CUIMG_GIT_COMMIT "" CACHE STRING "Commit --version reports (empty: ask git at build time)")
set(CUIMG_BUILD_COMMIT_SOURCE "${PROJECT_BINARY_DIR}/generated/build_commit.cc")
add_custom_target(cuimg_build_commit
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DOUTPUT=${CUIMG_BUILD_COMMIT_SOURCE}
          -DCOMMIT=${CUIMG_GIT_COMMIT} -P ${PROJECT_SOURCE_DIR}/cmake/WriteBuildCommit.cmake
  BYPRODUCTS ${CUIMG_BUILD_COMMIT_SOURCE}
  COMMENT "Source commit for --version"
  VERBATIM)
