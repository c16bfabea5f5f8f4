#!/usr/bin/env bash
# Pack-and-install smoke test: `npm pack` the package (prepack builds dist/), install the
# tarball into an empty directory as a user would, and run the installed binary there:
# --version, config schema, and a one-round `run --json` against the scripted fake provider,
# on the checkout's Node and on the oldest Node that "engines" admits.
# Uses the checkout's Node (the `node` devDependency) for everything, including the install.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
export PATH="$repo/node_modules/.bin:$PATH"
work="$(mktemp -d)"
fake_pid=""
cleanup() {
  if [ -n "$fake_pid" ]; then kill "$fake_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "smoke-pack: node $(node --version), packing"
tgz="$(npm pack --silent --pack-destination "$work" | tail -n 1)"
echo "smoke-pack: packed $tgz ($(du -k "$work/$tgz" | cut -f1) KiB)"
if tar -tzf "$work/$tgz" | grep -E '^package/(src|test|bench)/' >/dev/null; then
  echo "smoke-pack: FAIL: the tarball ships sources or tests" >&2
  exit 1
fi

# The web console ships built (dist/ui), since an installed package has no bundler.
listing="$(tar -tzf "$work/$tgz")"
for f in package/dist/ui/index.html package/dist/ui/assets/app.js package/dist/ui/assets/app.css; do
  if ! grep -qx "$f" <<<"$listing"; then
    echo "smoke-pack: FAIL: the tarball lacks $f" >&2
    exit 1
  fi
done
echo "smoke-pack: the web console is in the tarball"

mkdir -p "$work/app" "$work/home"
cd "$work/app"
npm init -y >/dev/null
start=$(date +%s%N)
npm install --no-audit --no-fund --loglevel=error "$work/$tgz" >/dev/null
echo "smoke-pack: installed in $(( ($(date +%s%N) - start) / 1000000 )) ms," \
  "node_modules $(du -sk node_modules | cut -f1) KiB"
export HOLON_HOME="$work/home"
unset HOLON_CONTROL_TOKEN

version="$(npx --no-install holon --version)"
echo "smoke-pack: holon --version -> $version"
npx --no-install holon config schema --json >"$work/schema.json"
node -e 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))' "$work/schema.json"
echo "smoke-pack: config schema is JSON ($(wc -c <"$work/schema.json") bytes)"

# The fake provider runs from the checkout (it is a test fixture, not part of the package).
coproc FAKE { exec node "$repo/test/fake-provider/main.ts" "smoke ok"; }
fake_pid=$FAKE_PID
read -r urls <&"${FAKE[0]}"
base="$(node -e 'process.stdout.write(JSON.parse(process.argv[1]).openai)' "$urls")"
npx --no-install holon config providers set fake --transport openai_responses \
  --base-url "$base" --credential-source none --credential-kind none >/dev/null
npx --no-install holon config set model.default fake/test-model >/dev/null
out="$(npx --no-install holon run --json "say ok")"
node -e '
  const r = JSON.parse(process.argv[1]);
  const text = JSON.stringify(r);
  if (!text.includes("smoke ok")) { console.error("unexpected run result: " + text); process.exit(1); }
' "$out"
echo "smoke-pack: run --json answered through the fake provider"

# The oldest Node that "engines" admits runs the installed package too (the node package
# from the registry brings that exact version, as the checkout's devDependency brings 24).
min="$(node -p 'require(process.argv[1]).engines.node.replace(/^>=\s*/, "")' "$repo/package.json")"
mkdir -p "$work/node-min"
(cd "$work/node-min" && npm init -y >/dev/null &&
  npm install --no-audit --no-fund --loglevel=error "node@$min" >/dev/null)
old_path="$PATH"
export PATH="$work/node-min/node_modules/.bin:$PATH"
if [ "$(node --version)" != "v$min" ]; then
  echo "smoke-pack: FAIL: wanted Node $min, got $(node --version)" >&2
  exit 1
fi
"$work/app/node_modules/.bin/holon" --version >/dev/null
out="$("$work/app/node_modules/.bin/holon" run --json "say ok")"
node -e '
  const r = JSON.parse(process.argv[1]);
  if (!JSON.stringify(r).includes("smoke ok")) { console.error("unexpected run result"); process.exit(1); }
' "$out"
export PATH="$old_path"
echo "smoke-pack: run --json works on Node $min, the engines minimum"

# A global install into a prefix of its own, run by absolute path.
npm install --global --prefix "$work/global" --no-audit --no-fund --loglevel=error \
  "$work/$tgz" >/dev/null
"$work/global/bin/holon" --version >/dev/null
echo "smoke-pack: global install runs"
echo "smoke-pack: 5 passed, 0 failed"
