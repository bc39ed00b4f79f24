import { sourceConformance } from '@rampart/plugin-kit/testing';
import { netfilterLogSource } from './index.ts';

const line = (port: number) =>
  `May 31 10:00:0${port % 10} fw kernel: [ 8123.4] RAMPART-DROP IN=eth0 OUT= SRC=203.0.113.5 DST=192.0.2.10 LEN=60 PROTO=TCP SPT=40000 DPT=${port} WINDOW=64240 RES=0x00 SYN URGP=0`;

sourceConformance({
  definition: netfilterLogSource,
  config: (file) => ({ active: true, options: { log_path: file, scan_ports: 3 } }),
  lines: [line(21), line(22), line(23)],
  expected: ['203.0.113.5 port_scan'],
});
