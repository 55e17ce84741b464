-- A scratch account and lease for bench/charge_batch.sh, and the charges and usage records
-- the journal would hand tollgate_charge_batch_v4 (examples taken from a relay_bench run).
INSERT INTO accounts (id, name, balance_nanos, held_nanos, disabled, created_at)
  VALUES ('acct_bench', 'bench', 1000000000000000, 0, 0, 0) ON CONFLICT DO NOTHING;
INSERT INTO leases (id, account_id, owner, amount_nanos, granted_nanos, state, created_at, expires_at)
  VALUES ('lease_bench', 'acct_bench', 'w_bench', 1000000000000000, 1000000000000000, 'open', 0, 9999999999999) ON CONFLICT DO NOTHING;
UPDATE accounts SET leased_nanos = 1000000000000000 WHERE id = 'acct_bench';
CREATE SEQUENCE IF NOT EXISTS bench_seq;
CREATE OR REPLACE FUNCTION bench_charges(n int, tag text) RETURNS jsonb LANGUAGE sql AS $$
SELECT jsonb_agg(jsonb_build_object('account_id','acct_bench','anomaly',null,'bound_nanos',400,'charge',200,'estimated',0,
 'hold_id','hold_'||tag||'_'||i,'id','led_'||tag||'_'||i,'key_id','key_01a2534d36350e8a38eb8ebc','lease_id','lease_bench',
 'model','text-embedding-3-small','note',null,'ord',i-1,'price_group',null,'price_multiplier',null,'price_version',1,
 'quantity','{"tokens":10}','request_id','req_'||tag||'_'||i,'share',200)) FROM generate_series(1,n) i $$;
CREATE OR REPLACE FUNCTION bench_usage(n int, tag text) RETURNS jsonb LANGUAGE sql AS $$
SELECT jsonb_agg(jsonb_build_object('account_id','acct_bench','bound_basis','twice the hold','channel','static','charge_nanos',200,
 'created_at',1796693903578,'endpoint','embeddings','estimated',0,'hold_id','hold_'||tag||'_'||i,'hold_nanos',200,
 'id','use_'||tag||'_'||i,'key_id','key_01a2534d36350e8a38eb8ebc','kind','request','latency_ms',3,'measured','vendor',
 'meter','tokens','model','text-embedding-3-small','note',null,'price_group',null,'price_version',1,'quantity','{"tokens":10}',
 'request_id','req_'||tag||'_'||i,'status',200,'task_id',null,'units',10,'upstream_ms',1)) FROM generate_series(1,n) i $$;
