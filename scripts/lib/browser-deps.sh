# shellcheck shell=bash
# What the page's browser test (crates/bosun-serve/tests/it/browser.rs)
# needs: Chromium and its WebDriver server, chromedriver, from Debian's
# `chromium` and `chromium-driver`. Sourced by scripts/test after
# scripts/lib/llama-deps.sh, whose installer it uses.

# browser_deps_missing: prints the Debian packages to install, one a line.
browser_deps_missing() {
    command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || echo chromium
    command -v chromedriver >/dev/null 2>&1 || echo chromium-driver
}

# ensure_browser_deps WHO: installs what is missing (as root, with
# apt-get), then checks again; nothing when BOSUN_SKIP_BROWSER=1 (the test
# then skips, and says so). Status 0 when everything is there; else it says
# what is missing (WHO starts the message) and returns 127.
ensure_browser_deps() {
    local who=$1 missing
    [ "${BOSUN_SKIP_BROWSER:-}" != 1 ] || return 0
    mapfile -t missing < <(browser_deps_missing)
    [ ${#missing[@]} -gt 0 ] || return 0
    if ! llama_deps_can_install; then
        echo "$who: install ${missing[*]} (the page's browser test needs them), or set BOSUN_SKIP_BROWSER=1 to skip that test" >&2
        return 127
    fi
    if ! llama_deps_install "${missing[@]}"; then
        echo "$who: apt-get install ${missing[*]} failed (the page's browser test needs them)" >&2
        return 127
    fi
    mapfile -t missing < <(browser_deps_missing)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "$who: still missing after apt-get install: ${missing[*]} (the page's browser test needs them)" >&2
        return 127
    fi
}
