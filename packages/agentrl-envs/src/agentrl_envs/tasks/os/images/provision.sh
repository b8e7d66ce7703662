#!/usr/bin/env bash
# Turn a Debian bookworm base into one of the AgentBench OS images: provision.sh default|packages|ubuntu
#
# The same script provisions the bubblewrap root filesystems (run in a build sandbox over a debootstrap
# tree) and the Docker images (env_images/os/*/Dockerfile), so both backends run the same system.
# Upstream's images are Ubuntu with `apt install python3 python3-pip git vim curl wget unzip zip tree`
# (plus npm for `packages`); Ubuntu mirrors are unreachable here, so these are the Debian bookworm
# packages of the same names, installed with their recommends as upstream's plain `apt install` does.
set -euo pipefail
image=${1:?usage: provision.sh default|packages|ubuntu}
export DEBIAN_FRONTEND=noninteractive

upstream=(python3 python3-pip git vim curl wget unzip zip tree)
# Samples rely on these although upstream's image list does not name them (Ubuntu's base image or the
# recommends bring them there): `ps`/`pkill` (procps), `sudo` (three samples reinstall it from apt).
extra=(procps sudo)
case "$image" in
    default) packages=("${upstream[@]}" "${extra[@]}") ;;
    packages) packages=("${upstream[@]}" "${extra[@]}" npm) ;;
    ubuntu) packages=() ;;
    *) echo "provision.sh: unknown image '$image' (default, packages or ubuntu)" >&2; exit 2 ;;
esac

apt-get update -qq
if [ ${#packages[@]} -gt 0 ]; then
    apt-get install -y -qq "${packages[@]}" >/dev/null
fi

if [ "$image" != ubuntu ]; then
    # Sandboxes have no network, yet some samples run `apt update && apt install sudo -y` in their init or
    # solution. An offline flat repository holding those packages lets such commands succeed as they do
    # upstream; it replaces the network sources.
    repo=/var/lib/agentrl-apt
    mkdir -p "$repo"
    (cd "$repo" && apt-get download -qq sudo)
    for deb in "$repo"/*.deb; do
        dpkg-deb -f "$deb"
        echo "Filename: ./$(basename "$deb")"
        echo "Size: $(stat -c %s "$deb")"
        echo "SHA256: $(sha256sum "$deb" | cut -d' ' -f1)"
        echo
    done >"$repo/Packages"
    rm -f /etc/apt/sources.list.d/*
    echo "deb [trusted=yes] file:$repo ./" >/etc/apt/sources.list
fi

if [ "$image" = ubuntu ]; then
    # upstream: `RUN echo "tmp" > file.txt` with the image's working directory, /
    echo tmp >/file.txt
fi

apt-get clean
rm -rf /var/lib/apt/lists/*
