-- What each agent announced it can run (labels, kinds, version), on the sync channel and in
-- feedback (issue 17): GET /agents shows it, so an operator sees which integrations an agent
-- can run before saving a setting it would refuse.
alter table agents add column capabilities jsonb;
