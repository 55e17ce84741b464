# Shared by the bench scripts (sourced, after `cd` to the repository root): the release binary,
# a scratch directory removed on exit with every background job stopped, free ports, the
# simulated vendors as their own process, and the default configuration pointed at them.
cargo build --release --quiet -p tollgate
bin=target/release/tollgate
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Starts the simulator on a free port ($sim_port).
start_sim() {
  sim_port=$(free_port)
  "$bin" sim --listen "127.0.0.1:$sim_port" 2>"$work/sim.log" &
}

# Writes $work/tollgate.toml: the embedded default with its channels on the simulator process;
# extra arguments are more sed expressions (-e '…').
write_config() {
  sed -e "s|^enabled = true|enabled = false|" -e "s|base_url = \"sim\"|base_url = \"http://127.0.0.1:$sim_port\"|" \
    "$@" <("$bin" config default) >"$work/tollgate.toml"
}

# Waits until the gateway on port $1 answers /healthz.
wait_healthy() {
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$1/healthz" >/dev/null && return 0; sleep 0.1; done
  return 1
}
