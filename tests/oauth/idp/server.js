// The authorization server of the OAuth tests and of docs/team-gateway.md's worked setup, FOR
// TRYING ONLY (its login form takes any name and password): panva's oidc-provider on loopback,
// configured from the JSON file named by argv[2] (port, signing keys, clients, the resources it
// issues tokens for). JWT access tokens (RFC 9068) for a resource indicator (RFC 8707), opaque ones
// for the resources listed in `opaque` (RFC 7662 introspection); client credentials, dynamic
// registration and the development login form for the authorization-code flow.
//
// `grants` (optional) is the per-person policy: which scopes of the resources each person (the
// login name) may be granted, `*` for everyone else; a scope a person asks for beyond it is left
// out of the token, whatever client they sign in with. Dynamically registered clients may ask for
// any scope (the policy decides per person) and get the authorization-code grant (and refresh
// tokens) only. `store` (optional) is a file that keeps registered clients across a restart.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import Provider, { errors } from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const issuer = `http://127.0.0.1:${config.port}`;
const REGISTERED_GRANTS = new Set(['authorization_code', 'refresh_token']);

// Which resource scopes `accountId` may hold (undefined: no per-person policy).
function allowedScopes(accountId) {
  if (!config.grants) return undefined;
  return new Set(config.grants[accountId] ?? config.grants['*'] ?? []);
}

// The session's grant for this client (the default), less every scope the person may not hold:
// marked rejected, so the consent prompt never offers it and no token carries it.
async function loadExistingGrant(ctx) {
  const { oidc } = ctx;
  const grantId = oidc.result?.consent?.grantId || oidc.session.grantIdFor(oidc.client.clientId);
  let grant = grantId ? await oidc.provider.Grant.find(grantId) : undefined;
  const allowed = allowedScopes(oidc.account.accountId);
  if (allowed === undefined) return grant;
  const refused = config.scopes.filter((scope) => !allowed.has(scope));
  if (!refused.length) return grant;
  grant ??= new oidc.provider.Grant({ accountId: oidc.account.accountId, clientId: oidc.client.clientId });
  for (const resource of config.resources) grant.rejectResourceScope(resource, refused.join(' '));
  if (grantId) await grant.save();
  return grant;
}

// Registered clients (Client) in a file when `store` is set, everything else in memory.
const kept = new Map();
const clients = config.store ? readStore() : {};
function readStore() {
  try { return JSON.parse(readFileSync(config.store, 'utf8')); } catch { return {}; }
}
class Adapter {
  constructor(name) { this.name = name; }
  key(id) { return `${this.name}:${id}`; }
  async upsert(id, payload, expiresIn) {
    if (this.name === 'Client' && config.store) {
      clients[id] = payload;
      writeFileSync(`${config.store}.tmp`, JSON.stringify(clients), { mode: 0o600 });
      renameSync(`${config.store}.tmp`, config.store);
      return;
    }
    kept.set(this.key(id), { payload, until: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
  }
  async find(id) {
    if (this.name === 'Client' && config.store) return clients[id];
    const found = kept.get(this.key(id));
    if (!found || found.until < Date.now()) return undefined;
    return found.payload;
  }
  async findByUid(uid) {
    for (const { payload } of kept.values()) if (payload.kind === this.name && payload.uid === uid) return payload;
    return undefined;
  }
  async findByUserCode(userCode) {
    for (const { payload } of kept.values()) if (payload.kind === this.name && payload.userCode === userCode) return payload;
    return undefined;
  }
  async consume(id) {
    const found = kept.get(this.key(id));
    if (found) found.payload.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id) {
    if (this.name === 'Client' && config.store) delete clients[id];
    kept.delete(this.key(id));
  }
  async revokeByGrantId(grantId) {
    for (const [key, { payload }] of kept) if (payload.grantId === grantId) kept.delete(key);
  }
}

const provider = new Provider(issuer, {
  adapter: Adapter,
  jwks: config.jwks,
  clients: config.clients,
  scopes: ['openid', 'offline_access', ...config.scopes],
  cookies: { keys: ['oauth-tests-cookie-key'] },
  clientDefaults: { id_token_signed_response_alg: 'ES256' },
  findAccount: (_ctx, id) => ({
    accountId: id,
    claims: () => (id.includes('@') ? { sub: id, email: id } : { sub: id }),
  }),
  loadExistingGrant,
  // The person's e-mail in the access token too (what the gateway names them by to the portal).
  extraTokenClaims: (_ctx, token) => (token.accountId?.includes('@') ? { email: token.accountId } : undefined),
  extraClientMetadata: {
    properties: ['svc_registered'],
    validator(ctx, key, _value, metadata) {
      delete metadata[key];
      // Dynamic registration is for the hosts people sign in with: the authorization-code grant
      // (and refresh) only; a stranger must not register a client-credentials client and get a
      // token with no person signing in (scripts are pre-registered: `clients`).
      if (!['registration', 'client_update'].includes(ctx?.oidc?.route)) return;
      // A registered client may ask for any scope: the person's policy decides what is granted.
      delete metadata.scope;
      if (!metadata.grant_types.every((grant) => REGISTERED_GRANTS.has(grant))) {
        throw new errors.InvalidClientMetadata('a dynamically registered client may use the authorization_code and refresh_token grants only');
      }
    },
  },
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    registration: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => {
        if (!config.resources.includes(resource)) throw new errors.InvalidTarget();
        return {
          scope: config.scopes.join(' '),
          audience: resource,
          accessTokenTTL: config.ttl ?? 600,
          accessTokenFormat: (config.opaque ?? []).includes(resource) ? 'opaque' : 'jwt',
          jwt: { sign: { alg: config.alg ?? 'ES256' } },
        };
      },
    },
  },
});

provider.listen(config.port, '127.0.0.1', () => {
  console.log(`oidc-provider ready at ${issuer}`);
});
