#!/bin/sh
# Compose service `agent`: at first start, the demo configuration (RAMPART_SERVER, a sample SSH
# log, the dry-run enforcer) and registration with the demo organization's admin key that the
# demo-key service left; then the unit's ExecStart, as its user rampart-agent.
set -eu
config=/etc/rampart-agent/agent.json
state=/var/lib/rampart-agent
authlog=/var/log/rampart-demo/auth.log

install -d -m 0700 -o rampart-agent -g rampart-agent "$state"
install -d -m 0750 -o root -g adm /var/log/rampart-demo
[ -e "$authlog" ] || install -m 0640 -o root -g adm /dev/null "$authlog"

as_agent() {
  setpriv --reuid=rampart-agent --regid=rampart-agent --groups=adm --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"
}

if [ ! -s "$state/credentials.json" ]; then
  sed -e "s|@SERVER@|${RAMPART_SERVER:?set RAMPART_SERVER to the API base, http://server:8080/api/v1}|" \
      -e "s|@GAID@|${RAMPART_GAID:-RMP-AGENT-ID-compose}|" \
      /usr/local/share/rampart/agent.compose.json >"$config"
  chown root:rampart-agent "$config"
  chmod 0640 "$config"
  RAMPART_ADMIN_KEY="$(cat /var/lib/rampart-bootstrap/admin-key)" as_agent /usr/bin/rampart-agent register -c "$config"
fi

# The unit's ExecStart line, as written (plain words).
exec_start=$(sed -n 's/^ExecStart=//p' /usr/lib/systemd/system/rampart-agent.service)
# shellcheck disable=SC2086
exec setpriv --reuid=rampart-agent --regid=rampart-agent --groups=adm --inh-caps=-all --bounding-set=-all --no-new-privs -- $exec_start
