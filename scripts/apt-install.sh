#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make deps` (as root): apt-get update, then install the packages given.
#
# Another apt-get or unattended-upgrades may hold apt's locks (a fresh cloud
# machine runs one at boot). Rather than fail at once with dpkg's lock
# error, wait for them up to APT_LOCK_WAIT seconds (default 600) and say
# who holds them, as apt names the holder. apt-get install waits by itself
# (DPkg::Lock::Timeout); apt 2.6 applies no timeout to apt-get update's
# lists lock, so update, and `apt-get check` (which only takes the dpkg
# lock, to say who holds it before the install waits), are asked again
# every few seconds while their lock is held.
set -uo pipefail

wait_limit=${APT_LOCK_WAIT:-600}
apt=(env DEBIAN_FRONTEND=noninteractive apt-get -qq -o "DPkg::Lock::Timeout=$wait_limit")
deadline=$((SECONDS + wait_limit))
said=

# until_unlocked CMD...: runs apt-get CMD until apt's lock is free.
until_unlocked() {
	local err holder
	while ! err=$("${apt[@]}" "$@" 2>&1 >/dev/null); do
		case $err in
		*"Could not get lock"*) ;;
		*)
			printf '%s\n' "$err" >&2
			return 1
			;;
		esac
		if [ "$SECONDS" -ge "$deadline" ]; then
			printf 'deps: apt is still locked after %ss:\n%s\n' "$wait_limit" "$err" >&2
			return 1
		fi
		holder=$(printf '%s\n' "$err" | sed -n 's/.*It is held by \(process [0-9]* ([^)]*)\).*/\1/p' | head -n 1)
		if [ "$said" != "$holder" ]; then
			echo "deps: waiting for the apt lock held by ${holder:-another process} (up to ${wait_limit}s)"
			said=$holder
		fi
		sleep 3
	done
}

until_unlocked update || exit 1
until_unlocked check || exit 1
"${apt[@]}" install -y --no-install-recommends "$@" >/dev/null
