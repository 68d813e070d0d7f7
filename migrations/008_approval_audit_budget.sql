-- Rejected approval clicks are audited up to a budget per clicker and minute (by the database's
-- clock); past it, a click is still rejected but only counted here. Without the budget, anyone
-- able to press buttons could grow countersign.approval_audit without bound.
CREATE TABLE countersign.approval_audit_budget (
  -- The clicker, as platform:userId.
  actor text NOT NULL,
  -- The start of the minute the rejections fell in (date_trunc('minute', now())).
  window_start timestamptz NOT NULL,
  -- Rejections written to approval_audit in this window (at most the budget).
  written integer NOT NULL,
  -- Rejections past the budget: not written, only counted.
  suppressed integer NOT NULL,
  PRIMARY KEY (actor, window_start)
);
CREATE INDEX approval_audit_budget_window ON countersign.approval_audit_budget (window_start);
