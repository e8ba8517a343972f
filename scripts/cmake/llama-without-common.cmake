# Included before llama.cpp's project() (CMAKE_PROJECT_INCLUDE_BEFORE, set in
# .cargo/config.toml): llama.cpp's `common` library is not built.
#
# bosun needs none of it (its schema-to-grammar converter is
# crates/bosun-local/src/engine/gbnf, and it arms the tool grammar itself),
# and it is about half of llama.cpp's compile time: 53 of its 128 objects.
# llama-cpp-2 turns llama-cpp-sys-2's `common` feature on whatever its own
# features say, and llama-cpp-sys-2 then asks CMake for the library; this
# overrides that request. The C++ wrapper llama-cpp-sys-2 still compiles
# is linked only if something calls it, and nothing does.
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "bosun: llama.cpp's common library is not used" FORCE)
