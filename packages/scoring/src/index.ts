export { liveScore, secondsUntilBelow, lastSecondAtOrAbove, reanchoredScore, EVAL_JS, EXEC_PYTHON } from './decay.ts';
export { bandOf, DEFAULT_BANDS } from './bands.ts';
export type { BandName, BandRange, Bands } from './bands.ts';
export { isBlocked } from './decision.ts';
export type {
  BlockInput,
  BlockReason,
  BlockVerdict,
  BlockingRule,
  Decision,
} from './decision.ts';
export {
  anchorTs,
  scoreV32,
  scoreV32Tables,
  V32_PARAMS,
  V32_SINGLE_ORG_CEILING,
  V32_VERSION,
} from './score-v32.ts';
export type { OrgAggregate, ScoreComponents, ScoreResult, ScoreV32Tables } from './score-v32.ts';
