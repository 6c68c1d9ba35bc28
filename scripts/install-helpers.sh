# Sourced by the set-up scripts (bash): acting as root, and installing Debian's packages.

# Sets SUDO to what runs a command as root: nothing as root, `sudo -n` with passwordless
# sudo. Fails (returns 1) when neither is there.
root_or_sudo() {
  if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  else
    return 1
  fi
}

# Installs the packages quietly and non-interactively (no recommends, the machine's own
# configuration files kept), updating the package lists once if the first try fails; the
# second try's errors are shown. Needs SUDO (root_or_sudo).
apt_install() {
  local options=(-y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold --no-install-recommends)
  "${SUDO[@]}" apt-get install "${options[@]}" "$@" </dev/null >/dev/null 2>&1 && return 0
  "${SUDO[@]}" apt-get update -q </dev/null >/dev/null 2>&1 || true
  "${SUDO[@]}" apt-get install "${options[@]}" "$@" </dev/null >/dev/null
}
