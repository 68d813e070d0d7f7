-- Platform event ids already taken in (Slack's Events API retries a delivery it thinks failed):
-- a retry finds its id here and is not processed twice, whichever ingress replica receives it.
CREATE TABLE countersign.inbound_events (
  event_id text PRIMARY KEY,
  received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inbound_events_received ON countersign.inbound_events (received_at);
