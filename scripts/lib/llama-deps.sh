# shellcheck shell=bash
# What building llama.cpp (compiled into bosun-local) needs: cmake, a C++
# compiler, and a libclang that bindgen can load. Sourced by scripts/test and
# scripts/demo; tested against fake library directories by
# scripts/test-deps-detection.
#
# bindgen loads libclang through clang-sys (with its default `runtime`
# feature), which on Linux accepts only the file names below, and skips any
# name containing `-cpp.`: libclang-cpp.so.14, present on fresh Debian images,
# is clang's C++ library, not libclang, so it does not count.

# find_libclang PATH...: prints the first libclang clang-sys would load that
# is directly in one of the given directories (not below them), or is one of
# the given paths itself; status 1 when there is none. Broken symlinks do not
# count.
find_libclang() {
    [ $# -gt 0 ] || return 1
    local found path paths=()
    # Relative paths get a ./ so that find cannot read one as an expression.
    for path in "$@"; do
        case $path in /*) paths+=("$path") ;; *) paths+=("./$path") ;; esac
    done
    found=$(find -L "${paths[@]}" -maxdepth 1 ! -type d ! -type l \
        \( -name 'libclang.so' -o -name 'libclang-*.so' -o -name 'libclang.so.*' -o -name 'libclang-*.so.*' \) \
        ! -name '*-cpp.*' -print -quit 2>/dev/null) || true
    [ -n "$found" ] || return 1
    printf '%s\n' "$found"
}

# libclang_search_dirs: prints, one a line, where clang-sys looks: only
# $LIBCLANG_PATH when it is set; else bin, lib and lib64 under
# `llvm-config --prefix` ($LLVM_CONFIG_PATH, else llvm-config on the PATH)
# and the directories matching its Linux patterns (/usr/local/llvm*/lib*,
# /usr/local/lib*, /usr/lib* and two levels below them: /usr/lib/llvm-14/lib,
# /usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/local/lib, ...).
libclang_search_dirs() (
    if [ -n "${LIBCLANG_PATH:-}" ]; then
        printf '%s\n' "$LIBCLANG_PATH"
        exit 0
    fi
    prefix=$("${LLVM_CONFIG_PATH:-llvm-config}" --prefix 2>/dev/null) || prefix=
    prefix=${prefix%%$'\n'*}
    if [ -n "$prefix" ]; then
        printf '%s\n' "$prefix/bin" "$prefix/lib" "$prefix/lib64"
    fi
    shopt -s nullglob
    for dir in /usr/local/llvm*/lib*/ /usr/local/lib*/*/*/ /usr/local/lib*/*/ /usr/local/lib*/ \
        /usr/lib*/*/*/ /usr/lib*/*/ /usr/lib*/; do
        printf '%s\n' "${dir%/}"
    done
)

# libclang_found: whether bindgen would find a libclang on this machine.
libclang_found() {
    local dirs
    mapfile -t dirs < <(libclang_search_dirs)
    find_libclang "${dirs[@]}" >/dev/null
}

# libclang_hint: what bindgen looks for and where, for an error message.
libclang_hint() {
    echo "  bindgen needs libclang.so, libclang-*.so, libclang.so.* or libclang-*.so.* (libclang-cpp* does not count)"
    if [ -n "${LIBCLANG_PATH:-}" ]; then
        echo "  in LIBCLANG_PATH=$LIBCLANG_PATH, the only place it looks while that is set"
    else
        echo "  in /usr/lib/llvm-*/lib, /usr/lib/<arch>, /usr/lib64, /usr/local/lib or beside llvm-config;"
        echo "  on Debian or Ubuntu: apt-get install libclang-dev, or set LIBCLANG_PATH to the directory holding it"
    fi
}

# llama_deps_missing: prints the Debian packages to install, one a line.
llama_deps_missing() {
    command -v cmake >/dev/null 2>&1 || echo cmake
    command -v g++ >/dev/null 2>&1 || echo g++
    libclang_found || echo libclang-dev
}

# llama_deps_can_install: whether this process may install packages.
llama_deps_can_install() {
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1
}

# llama_deps_install PACKAGE...: apt-get install, updating the package lists
# first only if the install fails without.
llama_deps_install() {
    echo "==> apt-get install -y $*"
    apt-get install -y "$@" >/dev/null 2>&1 \
        || { apt-get update >/dev/null && apt-get install -y "$@" >/dev/null; }
}

# ensure_llama_deps WHO: installs what is missing (as root, with apt-get),
# then checks again. Status 0 when everything is there; else it says what is
# missing (WHO starts the message) and returns 127.
ensure_llama_deps() {
    local who=$1 missing
    mapfile -t missing < <(llama_deps_missing)
    [ ${#missing[@]} -gt 0 ] || return 0
    if ! llama_deps_can_install; then
        echo "$who: install ${missing[*]} (needed to build llama.cpp), then run again" >&2
        if [[ " ${missing[*]} " == *" libclang-dev "* ]]; then libclang_hint >&2; fi
        return 127
    fi
    if ! llama_deps_install "${missing[@]}"; then
        echo "$who: apt-get install ${missing[*]} failed (needed to build llama.cpp)" >&2
        return 127
    fi
    mapfile -t missing < <(llama_deps_missing)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "$who: still missing after apt-get install: ${missing[*]} (needed to build llama.cpp)" >&2
        if [[ " ${missing[*]} " == *" libclang-dev "* ]]; then libclang_hint >&2; fi
        return 127
    fi
}
