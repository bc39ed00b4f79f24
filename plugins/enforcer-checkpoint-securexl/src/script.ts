import { canonicalCidr } from '@rampart/plugin-kit';

/*
 * The bash the enforcer sends to a gateway in Expert mode, and the reading of what comes back.
 * Everything interpolated is validated before it gets here: the command base is one of a known
 * set (config schema), VSIDs are digits, the temp directory a plain path, addresses come from
 * canonicalCidr. So no quoting of untrusted text happens here.
 *
 * Every exec is one script: the Check Point environment (an exec is a non-interactive shell,
 * which reads no profile: sk90441), `vsenv` when VSX, a helper `rx` that runs one command, prints
 * its output and on a non-zero exit prints a `rampart-failed` line and stops the script, then the
 * commands, then `rampart-done` so that a script cut short cannot pass for a whole one.
 */

/** Command bases the `command` setting may name (older gateways: `blacklist`; Maestro/ElasticXL: `g_`). */
export const COMMAND_BASES = ['fwaccel dos deny', 'fwaccel dos blacklist', 'g_fwaccel dos deny'] as const;
export type CommandBase = (typeof COMMAND_BASES)[number];

export const DONE = 'rampart-done';
const FAILED = 'rampart-failed';
const LIST = 'rampart-list';
export const HEREDOC_END = 'RAMPART_EOF';

/** Runs "$@", prints its output; a non-zero exit prints the failure line and ends the script. */
export const RX = `rx() { out=$("$@" 2>&1); rc=$?; [ -n "$out" ] && printf '%s\\n' "$out"; if [ $rc -ne 0 ]; then printf '${FAILED} %s: %s\\n' "$rc" "$*"; exit 1; fi; }`;

/** One virtual system (its VSID), or the gateway itself when it is not VSX (`undefined`). */
export type Context = string | undefined;

export function script(vsx: boolean, body: string[]): string {
  return ['source /etc/profile.d/CP.sh', ...(vsx ? ['source /etc/profile.d/vsenv.sh'] : []), RX, ...body, `echo ${DONE}`].join('\n');
}

/**
 * `lines` once per context, each after `vsenv <id>`. vsenv changes the shell it runs in, so it
 * cannot run inside rx's `$(...)`: its failure is caught here instead.
 */
export function inEachContext(contexts: readonly Context[], lines: (context: Context) => string[]): string[] {
  return contexts.flatMap((vs) => [...(vs === undefined ? [] : [`vsenv ${vs} || { echo "${FAILED} $?: vsenv ${vs}"; exit 1; }`]), ...lines(vs)]);
}

/** The address as the deny list takes it (a host: no prefix). */
export function hostOf(cidr: string): string {
  return cidr.endsWith('/32') ? cidr.slice(0, -3) : cidr;
}

export const cmd = {
  add: (base: CommandBase, cidr: string) => `rx ${base} -a ${hostOf(cidr)}`,
  remove: (base: CommandBase, cidr: string) => `rx ${base} -d ${hostOf(cidr)}`,
  flush: (base: CommandBase) => `rx ${base} -F`,
  load: (base: CommandBase, file: string) => `rx ${base} -l ${file}`,
  /** `-s` after a marker naming the context, so that each context's list is read apart. */
  show: (base: CommandBase, vs: Context) => [`echo '${LIST} ${vs ?? '-'}'`, `rx ${base} -s`],
  /** Writes `hosts` to `file` (`append` adds to it): a quoted heredoc, nothing expands. */
  writeFile: (file: string, hosts: readonly string[], append: boolean) => [
    `umask 077; cat ${append ? '>>' : '>'} ${file} <<'${HEREDOC_END}'`,
    ...hosts,
    HEREDOC_END,
  ],
  removeFile: (file: string) => `rm -f ${file}`,
};

/**
 * Lines a gateway prints when a command went wrong although it exited 0 (fwaccel prints its usage
 * for arguments it does not take). Matched at the start of a line, case-insensitively.
 */
const ERROR_LINE = /^\s*(error|failed|failure|invalid|usage|unknown|bash: |-bash: |.*: command not found)/i;

/**
 * What went wrong in one exec's output, as a line to report, or undefined when the script ran to
 * its end without an error line.
 */
export function failureOf(output: string): string | undefined {
  const lines = output.split('\n').map((l) => l.trimEnd());
  const failed = lines.findIndex((l) => l.startsWith(`${FAILED} `));
  if (failed >= 0) {
    const said = lines.slice(0, failed).reverse().find((l) => l.trim() && !l.startsWith(`${LIST} `));
    const what = lines[failed]!.slice(FAILED.length + 1);
    return said ? `${said.trim()} (${what})` : `exit ${what}`;
  }
  const error = lines.find((l) => ERROR_LINE.test(l));
  if (error) return error.trim();
  if (!lines.includes(DONE)) {
    const first = lines.find((l) => l.trim());
    return `the script did not run to its end (is the user's shell bash, Expert mode?)${first ? `: ${first.trim()}` : ''}`;
  }
  return undefined;
}

/** The addresses one `-s` prints: one a line; other lines (an empty-list notice, headers) are skipped. */
export function parseDenyList(output: string): string[] {
  const out: string[] = [];
  for (const line of output.split('\n')) {
    const m = /^\s*(\d{1,3}(?:\.\d{1,3}){3})(?:\/32)?(?:\s|$)/.exec(line);
    const cidr = m ? canonicalCidr(m[1]!) : undefined;
    if (cidr) out.push(cidr);
  }
  return out;
}

/** The `-s` output of each context in one exec's output, by context (`-` when not VSX). */
export function listSections(output: string): Map<string, string[]> {
  const sections = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of output.split('\n')) {
    const m = new RegExp(`^${LIST} (\\S+)$`).exec(line.trim());
    if (m) sections.set(m[1]!, (current = []));
    else if (line.trim() === DONE) current = undefined;
    else current?.push(line);
  }
  return new Map([...sections].map(([vs, lines]) => [vs, parseDenyList(lines.join('\n'))]));
}
