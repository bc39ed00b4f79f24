import { FailPolicy, type Detection, type PluginLogger, type PolicyOptions } from '@rampart/plugin-kit';
import type { NeverBlock } from '../sync/never-block.ts';
import { isIpv4 } from '@rampart/contracts';
import type { AgentMetrics } from './metrics.ts';
import type { Spool } from './spool.ts';

export interface PipelineOptions {
  spool: Spool;
  metrics: AgentMetrics;
  log: PluginLogger;
  neverBlock: () => NeverBlock;
  /** `running = no` stops reporting. */
  reporting: () => boolean;
  onSpooled(): void;
}

/**
 * Detection → report: drops what may never be reported (the never-block list: private ranges,
 * our own addresses, the organization's reserved IPs, the allow-list; and IPv6, which `POST /ips`
 * does not take), counts the rest through the source's fail2ban-like policy, and spools each
 * report the policy completes.
 */
export class DetectionPipeline {
  private readonly policies = new Map<string, FailPolicy>();
  private pruneAt = 0;

  constructor(private readonly options: PipelineOptions) {}

  /** Sets (or resets, when the options changed) the policy of one source. */
  setPolicy(label: string, options: Partial<PolicyOptions>): void {
    this.policies.set(label, new FailPolicy(options));
  }

  removePolicy(label: string): void {
    this.policies.delete(label);
  }

  push(label: string, detection: Detection): void {
    const { metrics } = this.options;
    metrics.detections.inc({ source: label });
    if (!this.options.reporting()) {
      metrics.detectionsIgnored.inc({ reason: 'not_running' });
      return;
    }
    if (!isIpv4(detection.ip)) {
      metrics.detectionsIgnored.inc({ reason: detection.ip.includes(':') ? 'ipv6' : 'invalid' });
      return;
    }
    const protectedBy = this.options.neverBlock().protects(detection.ip);
    if (protectedBy) {
      metrics.detectionsIgnored.inc({ reason: protectedBy });
      return;
    }
    let policy = this.policies.get(label);
    if (!policy) {
      policy = new FailPolicy();
      this.policies.set(label, policy);
    }
    const candidate = policy.push(detection);
    if (detection.ts > this.pruneAt) {
      policy.prune(detection.ts);
      this.pruneAt = detection.ts + 60;
    }
    if (!candidate) return;
    const body = { ip: candidate.ip, confidence: candidate.confidence, source: candidate.source, notes: candidate.notes };
    // Synchronously: the report is on disk before the source's tailer saves its offset.
    try {
      const spooled = this.options.spool.appendSync(body, `${candidate.source}|${candidate.ip}|${candidate.ts}`);
      if (!spooled) {
        metrics.detectionsIgnored.inc({ reason: 'already_reported' });
        return;
      }
      metrics.reportsSpooled.inc();
      this.options.onSpooled();
    } catch (err) {
      this.options.log.error({ err, ip: body.ip }, 'report could not be spooled');
    }
  }

  /** Every report pushed so far is on disk already (appends are synchronous). */
  async flushed(): Promise<void> {}
}
