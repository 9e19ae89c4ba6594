#!/usr/bin/env bash
# The one test tool Debian does not package: kubernetes-validate (PyPI, pinned), which checks the
# rendered Kubernetes manifests against the API schemas (tests/e2e/test_deploy.py). It goes into
# its own virtual environment, $CUIMG_DEPLOY_TOOLS (default ~/.cache/cuimg/deploy-tools), where the
# test looks for it. kubectl (its `kustomize`) and promtool come from scripts/install_deps.sh.
set -euo pipefail
version=1.37.0
venv="${CUIMG_DEPLOY_TOOLS:-$HOME/.cache/cuimg/deploy-tools}"
if [ "$("$venv/bin/kubernetes-validate" --version 2>/dev/null)" = "$version" ]; then
  echo "install_deploy_tools: kubernetes-validate $version present in $venv"
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$version"
echo "install_deploy_tools: kubernetes-validate $version installed in $venv"
