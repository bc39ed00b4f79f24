/*
 * The agent half of bench/push-bursts.ts: the real agent (test/sync/burst-lab.ts: the `Agent`
 * class, its dry-run enforcer recorded) following the server over the sync channel, in a process
 * of its own. After each change its enforcer is handed, it sends its parent the set it holds
 * (addresses under PUSH_PREFIX) and when (epoch ms). Started by bench/push-bursts.ts; not run alone.
 */
import { startFollower } from '../test/sync/burst-lab.ts';

const prefix = process.env.PUSH_PREFIX!;
const follower = await startFollower({ url: process.env.PUSH_URL!, adminKey: process.env.PUSH_ADMIN!, gaid: process.env.PUSH_GAID!, threshold: Number(process.env.PUSH_THRESHOLD), logLevel: 'error' });
const now = () => performance.timeOrigin + performance.now();
const report = () => process.send!({ at: now(), held: [...follower.recorder.held].filter((v) => v.startsWith(prefix)).sort() });
follower.recorder.onChange = report;
report();
process.send!({ ready: true });
process.on('disconnect', () => {
  void follower.stop().finally(() => process.exit(0));
});
