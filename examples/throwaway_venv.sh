# Shared by examples/verl/check_verl.sh and examples/ray/check_ray.sh (sourced, not run): a throwaway
# venv for tests whose dependencies must stay out of the main environment, layered over the calling one.
#
# The calling environment is the interpreter named by $PYTHON, else the active virtualenv's python,
# else python3. When it imports what the tests need, the venv sees its packages (and its editable mmnp)
# through a .pth file, after the venv's own; otherwise the venv installs mmnp itself.

# throwaway_venv NAME FOLDER MODULES WHAT INSTALL: make the venv in FOLDER (when empty: a temporary
# folder, removed on exit) and set VENV to it; layered when the caller imports MODULES (e.g. "mmnp, pytest"),
# else standalone: say the caller lacks WHAT and run the function INSTALL, which installs into $VENV.
throwaway_venv() {
  local name=$1 folder=$2 modules=$3 what=$4 install=$5 py site caller
  py=${PYTHON:-${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}}
  py=${py:-python3}
  if [ -n "$folder" ]; then VENV=$folder; else
    VENV=$(mktemp -d "/tmp/mmnp-$name-venv.XXXXXX"); trap 'rm -rf "$VENV"' EXIT  # ours: removed when done
  fi
  VENV_START=$SECONDS
  "$py" -m venv "$VENV"
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  if "$py" -c "import $modules" 2>/dev/null; then
    caller=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "import site; site.addsitedir('$caller')" > "$site/zz-mmnp-caller.pth"
    echo "$name venv $VENV: layered over $caller"
  else
    echo "$name venv $VENV: standalone (the calling python lacks $what)"
    "$install"
  fi
}

# venv_tests NAME TEST_FILE: say how long the venv took, then run the tests in it.
venv_tests() {
  echo "$1 venv ready in $((SECONDS - VENV_START)) s"
  "$VENV/bin/python" -m pytest -q "$2" -p no:cacheprovider -rs
}
