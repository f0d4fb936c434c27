#!/bin/sh
# Install the Debian packages named in $APT_PACKAGES that are not installed
# yet. Does nothing (and needs no network) when all are present.
set -eu
missing=""
for p in $APT_PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing$missing"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing
