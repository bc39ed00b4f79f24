import { sourceConformance } from '@rampart/plugin-kit/testing';
import { sshdSource } from './index.ts';

sourceConformance({
  definition: sshdSource,
  config: (file) => ({ active: true, ssh_log_location: file }),
  lines: [
    'Mar  1 10:00:00 h sshd[1]: Invalid user oracle from 198.51.100.9 port 4242',
    'Mar  1 10:00:01 h CRON[2]: pam_unix(cron:session): session opened for user root',
    'Mar  1 10:00:02 h sshd-session[3]: Failed password for root from 2001:db8::5 port 22 ssh2',
  ],
  expected: ['198.51.100.9 invalid_user', '2001:db8::5 auth_failure'],
});
