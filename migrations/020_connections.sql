-- Per-person connections (#34): MCP servers with "auth": "oauth" act as the person who asked, with
-- that person's own OAuth tokens. Every secret here is sealed with AES-256-GCM under
-- TOKEN_ENCRYPTION_KEY (src/connections/token-crypto.ts): the database never holds a token, a client
-- secret or a PKCE verifier in the clear.

-- One person's connection to one server. A person is (platform, user_id, workspace): a user id
-- means a person only within the workspace that vouches for it ('' where the platform has none).
CREATE TABLE countersign.connections (
  platform text NOT NULL,
  user_id text NOT NULL,
  workspace text NOT NULL DEFAULT '',
  server text NOT NULL,
  -- The token response (access and refresh token, the issuer it came from), sealed.
  sealed_tokens text NOT NULL,
  -- The account at the server, when it says which (shown in listings; never a secret).
  account_name text,
  connected_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  -- When the access token expires, from the token response's expires_in; null when not said.
  expires_at timestamptz,
  PRIMARY KEY (platform, user_id, workspace, server)
);
CREATE INDEX connections_by_server ON countersign.connections (server);

-- The client registration at a server's authorization server (dynamic registration's answer), one
-- per server for everyone: kept so a restart never registers again.
CREATE TABLE countersign.oauth_clients (
  server text PRIMARY KEY,
  -- Public (it is in every authorization URL); in the clear so a registration replaces only the one
  -- its writer read, and two people connecting first at once keep one registration.
  client_id text NOT NULL,
  sealed_client text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- An authorization in progress: the OAuth `state` handed to the authorization server, single use,
-- bound to the person, the server and the parked turn that waits for it. Only a SHA-256 of the state
-- is stored, so reading this table gives nothing a forged callback could use.
CREATE TABLE countersign.oauth_states (
  state_hash text PRIMARY KEY,
  platform text NOT NULL,
  user_id text NOT NULL,
  workspace text NOT NULL DEFAULT '',
  server text NOT NULL,
  work_item_id uuid,
  -- Set right after the state is made, before the person is sent to the authorization server.
  sealed_code_verifier text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX oauth_states_expiry ON countersign.oauth_states (expires_at);
