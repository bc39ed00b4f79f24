import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AgentSettingsDocument, OrganizationConfig, mergeMaskedSecrets } from '@rampart/contracts';
import { z } from 'zod';
import type { PluginLogger } from '@rampart/plugin-kit';
import { DEFAULT_ORGANIZATION, type AgentFileConfig } from '../config/load.ts';
import { writeDurable } from './durable-file.ts';

export interface EffectiveSettings {
  settings: AgentSettingsDocument;
  organization: OrganizationConfig;
  /** `server` once the control plane sent the agent's document: from then on it wins. */
  origin: 'local' | 'server';
}

const Saved = z.object({
  settings: AgentSettingsDocument.optional(),
  organization: OrganizationConfig.optional(),
});

/**
 * The agent's settings: the local file until the server sends the agent's document (hello,
 * settings_changed, or a pull), the server's document from then on, kept on disk (0600, it
 * holds secrets) so a restart while the server is away still runs with it. A masked secret in a
 * pulled document keeps the value the agent already has.
 */
export class SettingsManager {
  private file: AgentFileConfig;
  private server: AgentSettingsDocument | undefined;
  private organization: OrganizationConfig = DEFAULT_ORGANIZATION;
  private readonly path: string;
  private listeners: ((next: EffectiveSettings, previous: EffectiveSettings) => void)[] = [];

  constructor(
    file: AgentFileConfig,
    private readonly log: PluginLogger,
  ) {
    this.file = file;
    this.path = join(file.local.state_dir, 'settings.json');
  }

  get local(): AgentFileConfig {
    return this.file;
  }

  current(): EffectiveSettings {
    return { settings: this.server ?? this.file.settings, organization: this.organization, origin: this.server ? 'server' : 'local' };
  }

  onChange(listener: (next: EffectiveSettings, previous: EffectiveSettings) => void): void {
    this.listeners.push(listener);
  }

  async restore(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    const parsed = Saved.safeParse(JSON.parse(text));
    if (!parsed.success) {
      this.log.warn({ path: this.path }, 'saved settings unreadable; ignored');
      return;
    }
    // Only a document for this agent counts (the file may name another gaid after a re-install).
    if (parsed.data.settings?.gaid === this.file.settings.gaid) this.server = parsed.data.settings;
    if (parsed.data.organization) this.organization = parsed.data.organization;
  }

  async fromServer(update: { settings?: AgentSettingsDocument | undefined; organization?: OrganizationConfig | undefined }): Promise<void> {
    const previous = this.current();
    if (update.settings) {
      if (update.settings.gaid !== this.file.settings.gaid) {
        this.log.warn({ gaid: update.settings.gaid }, 'server sent settings of another agent; ignored');
      } else {
        this.server = mergeMaskedSecrets(update.settings, previous.settings);
      }
    }
    if (update.organization) this.organization = update.organization;
    const next = this.current();
    if (JSON.stringify(next) === JSON.stringify(previous)) return;
    await writeDurable(this.path, JSON.stringify({ settings: this.server, organization: this.organization }), 0o600);
    this.log.info({ origin: next.origin }, 'settings changed by the server');
    this.emit(next, previous);
  }

  /** SIGHUP: the local file again (its local options always apply; its document only until the server's). */
  reloadLocal(file: AgentFileConfig): void {
    const previous = this.current();
    this.file = file;
    this.emit(this.current(), previous);
  }

  private emit(next: EffectiveSettings, previous: EffectiveSettings): void {
    for (const listener of this.listeners) listener(next, previous);
  }
}
