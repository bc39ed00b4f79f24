import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cmd, failureOf, inEachContext, listSections, script } from '../src/script.ts';

/*
 * The stand-in reads the scripts line by line; this runs them through the real bash (as sshd runs
 * an exec: `bash -c`), with fwaccel and vsenv as shell functions in place of the Check Point
 * profile scripts, to check what the stand-in takes on trust: rx stops the script at the first
 * failure, vsenv's context reaches the commands after it, heredocs write the file verbatim.
 */

const FAKES = [
  'fwaccel() { case "$4" in 192.0.2.66) echo "Error: refused $4"; return 3;; esac; echo "vs=${VS:-none} $*"; }',
  'vsenv() { [ "$1" = 9 ] && { echo "Virtual System 9 does not exist"; return 1; }; VS=$1; echo "Context is set to Virtual Device vs$1 (ID $1)."; }',
].join('\n');

function bash(text: string): string {
  const withFakes = text.replace('source /etc/profile.d/CP.sh\nsource /etc/profile.d/vsenv.sh', FAKES).replace('source /etc/profile.d/CP.sh', FAKES);
  const r = spawnSync('bash', ['-c', withFakes], { encoding: 'utf8' });
  return r.stdout + r.stderr;
}

const base = 'fwaccel dos deny' as const;

describe('the scripts under a real bash', () => {
  it('runs each VS after its vsenv and marks each -s', () => {
    const out = bash(script(true, inEachContext(['1', '2'], (vs) => [cmd.add(base, '192.0.2.1/32'), ...cmd.show(base, vs)])));
    expect(out).toBe(
      [
        'Context is set to Virtual Device vs1 (ID 1).',
        'vs=1 dos deny -a 192.0.2.1',
        'rampart-list 1',
        'vs=1 dos deny -s',
        'Context is set to Virtual Device vs2 (ID 2).',
        'vs=2 dos deny -a 192.0.2.1',
        'rampart-list 2',
        'vs=2 dos deny -s',
        'rampart-done',
        '',
      ].join('\n'),
    );
    expect(failureOf(out)).toBeUndefined();
    expect([...listSections(out).keys()]).toEqual(['1', '2']);
  });

  it('stops at the first failing command and reports its line', () => {
    const failing = bash(script(false, [cmd.add(base, '192.0.2.1/32'), cmd.add(base, '192.0.2.66/32'), cmd.add(base, '192.0.2.2/32')]));
    expect(failing).toBe(['vs=none dos deny -a 192.0.2.1', 'Error: refused 192.0.2.66', 'rampart-failed 3: fwaccel dos deny -a 192.0.2.66', ''].join('\n'));
    expect(failureOf(failing)).toBe('Error: refused 192.0.2.66 (3: fwaccel dos deny -a 192.0.2.66)');
    const noVs = bash(script(true, inEachContext(['9', '1'], () => [cmd.flush(base)])));
    expect(noVs).toBe(['Virtual System 9 does not exist', 'rampart-failed 1: vsenv 9', ''].join('\n'));
  });

  it('writes the list file verbatim, appending after the first part', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rampart-securexl-'));
    try {
      const file = join(dir, 'deny.txt');
      expect(bash(script(false, cmd.writeFile(file, ['192.0.2.1', '192.0.2.2'], false)))).toBe('rampart-done\n');
      expect(bash(script(false, cmd.writeFile(file, ['192.0.2.3'], true)))).toBe('rampart-done\n');
      expect(readFileSync(file, 'utf8')).toBe('192.0.2.1\n192.0.2.2\n192.0.2.3\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
