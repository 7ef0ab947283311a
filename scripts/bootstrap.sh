#!/usr/bin/env bash
# Installs what svc needs on a Debian machine: system packages (apt-get, when root and missing)
# and the Python dependencies, pinned by uv.lock, into .venv. Safe to run again.
# Says each step as it starts and how long it took ("setup: ...: done in 12s"): a first run takes
# minutes (packages downloaded), and the tools run quietly (their own output is a line a package).
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
step_name="" step_began=0
# step WHAT HOW COMMAND...: says WHAT (and HOW, at the start), runs the command, says how long it
# took; a failing command ends the script (set -e, which an `if` around it would switch off inside
# a function), said on exit.
step() {
  step_name=$1 step_began=$SECONDS
  echo "setup: $step_name ($2) ..."
  shift 2
  "$@"
  echo "setup: $step_name: done in $((SECONDS - step_began))s"
  step_name=""
}
trap 'status=$?; [ "$status" = 0 ] || [ -z "$step_name" ] ||
      echo "setup: $step_name: failed after $((SECONDS - step_began))s (exit status $status)" >&2' EXIT

# Debian packages svc needs at run, test or bench time (the edge server and its Lua module, which
# holds the edge's routing table, the browser the tests drive, the load generator of bench/, the
# authoritative nameserver with its sqlite backend and dig, git and the ssh client for git hosting and
# its tests, fcgiwrap for bench/git.py's plain git http-backend peer, certutil (libnss3-tools) for
# `svc certs trust`; more join as their areas land).
APT_PACKAGES=(git openssh-client libnss3-tools fcgiwrap nginx-light libnginx-mod-http-lua nginx-dev gcc libc6-dev make zlib1g-dev libssl-dev libpcre2-dev chromium wrk pdns-server pdns-backend-sqlite3 dnsutils postgresql pebble)
command -v npm >/dev/null 2>&1 || APT_PACKAGES+=(npm)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
apt_install() {
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    step "Debian packages" "apt-get install ${missing[*]}; minutes, the first time" apt_install "${missing[@]}"
  else
    echo "setup: missing Debian packages (run as root to install): ${missing[*]}" >&2
  fi
else
  echo "setup: Debian packages: all ${#APT_PACKAGES[@]} installed"
fi

UV_VERSION=$(sed -n 's/^ *"uv==\([0-9.]*\)",*$/\1/p' pyproject.toml)
uv_install() {
  python3 -m venv .venv
  .venv/bin/pip install --quiet "uv==${UV_VERSION}"
}
if [ ! -x .venv/bin/uv ]; then
  step "uv ${UV_VERSION}" "pip, into .venv" uv_install
fi
step "Python packages" "uv sync into .venv, pinned by uv.lock; a minute or two the first time" \
  .venv/bin/uv sync --frozen --quiet --compile-bytecode

# From npm, pinned by package-lock.json: the dashboard's front-end packages (htmx, Pico), served by
# svc itself from src/svc/web/static/vendor/ (no CDN), and workerd, the runtime of the projects'
# workers (node_modules/.bin/workerd; docs/workers.md).
npm_install() {
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
  mkdir -p src/svc/web/static/vendor
  cp node_modules/htmx.org/dist/htmx.min.js node_modules/@picocss/pico/css/pico.min.css src/svc/web/static/vendor/
}
if command -v npm >/dev/null 2>&1; then
  step "npm packages" "htmx, Pico CSS, workerd: npm ci, pinned by package-lock.json; a minute or two the first time" \
    npm_install
else
  echo "setup: npm is missing: the dashboard will be unstyled and workers will not run (run as root to install it)" >&2
fi

# The edge's nginx module (svc/edge/module/: nginx reads the routing table in C), built for the
# installed nginx into the user's cache (~/.cache/svc/nginx-modules), so no svc start waits for it.
nginx_module() {
  PATH="$PATH:/usr/sbin" .venv/bin/python -c "from svc.edge.routes_module import main; main()" >/dev/null ||
    echo "setup: the edge's nginx module was not built" >&2
}
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
  step "the edge's nginx module" "built once per nginx version, cached under ~/.cache/svc" nginx_module
fi
echo "setup: all done in $((SECONDS - started))s"
