/**
 * Runs one command with a test's CDI spec folder seen at /etc/cdi, in a mount namespace of its own (the CDI test,
 * test/image/cdi.test.ts, starts this under `unshare --mount --propagation private`). podman 4.3 (Debian bookworm)
 * reads CDI specs from /etc/cdi and /var/run/cdi only — no `--cdi-spec-dir`, no `cdi_spec_dirs` — and a test never
 * writes the host's folders: so, inside the namespace only, /etc becomes an overlay of itself (its upper layer in
 * the test's folder), /etc/cdi is made there and the spec folder bind-mounted on it. The host's /etc is untouched;
 * the mounts end with the namespace.
 *
 * Usage: node cdi-namespace.js <spec folder> <work folder> <command> [arguments…]; exits with the command's status.
 * Child processes take argument arrays (no shell).
 */
import { spawnSync } from 'node:child_process';
import process from 'node:process';
import fs from 'node:fs';
import path from 'node:path';

const [specDir, workDir, command, ...args] = process.argv.slice(2);
if (!specDir || !workDir || !command) {
  process.stderr.write('usage: node cdi-namespace.js <spec folder> <work folder> <command> [arguments…]\n');
  process.exit(2);
}

/** Runs `cmd args`; exits 125 naming it when it fails. */
function must(cmd, argv) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8' });
  if (r.status !== 0) {
    process.stderr.write(
      `cdi-namespace: ${cmd} ${argv.join(' ')} failed: ${r.stderr || r.error?.message || r.status}\n`,
    );
    process.exit(125);
  }
}

const upper = path.join(workDir, 'etc-upper');
const work = path.join(workDir, 'etc-work');
fs.mkdirSync(upper, { recursive: true });
fs.mkdirSync(work, { recursive: true });
must('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=/etc,upperdir=${upper},workdir=${work}`, '/etc']);
fs.mkdirSync('/etc/cdi', { recursive: true });
must('mount', ['--bind', specDir, '/etc/cdi']);
const r = spawnSync(command, args, { stdio: 'inherit' });
process.exit(r.status ?? 125);
