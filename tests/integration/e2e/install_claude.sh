#!/usr/bin/env bash
# Install the real Claude Code CLI (a single native binary from npm, version pinned)
# into a cache folder, only when it is not there yet. tests/fakeapi/scenario.py runs it.
#   CLAUDE_CACHE   cache folder (default ~/.cache/fake-claude-api); each version in a folder of its own,
#                  so moving the pin installs the new version instead of finding the old one
#   CLAUDE_VERSION version (default 2.1.332)
# Prints the binary's path on success.
set -euo pipefail

version="${CLAUDE_VERSION:-2.1.332}"
cache="${CLAUDE_CACHE:-$HOME/.cache/fake-claude-api}/$version"
case "$(uname -m)" in
  x86_64|amd64) arch=x64 ;;
  aarch64|arm64) arch=arm64 ;;
  *) echo "install_claude.sh: unsupported machine $(uname -m)" >&2; exit 2 ;;
esac
case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) echo "install_claude.sh: unsupported system $(uname -s)" >&2; exit 2 ;;
esac
pkg="@anthropic-ai/claude-code-${os}-${arch}"
binary="$cache/node_modules/$pkg/claude"

if [ ! -x "$binary" ]; then
  command -v npm >/dev/null || { echo "install_claude.sh: npm not found" >&2; exit 3; }
  mkdir -p "$cache"
  npm install --no-save --no-audit --no-fund --prefix "$cache" "$pkg@$version" >&2
  chmod +x "$binary" 2>/dev/null || true
fi
[ -x "$binary" ] || { echo "install_claude.sh: $binary missing after install" >&2; exit 4; }
echo "$binary"
