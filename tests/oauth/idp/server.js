// The authorization server of the OAuth tests: panva's oidc-provider on loopback, configured from
// the JSON file named by argv[2] (port, signing keys, clients, the resources it issues tokens for).
// JWT access tokens (RFC 9068) for a resource indicator (RFC 8707), opaque ones for the resources
// listed in `opaque` (RFC 7662 introspection); client credentials, dynamic registration and the
// development login form for the authorization-code flow.
import { readFileSync } from 'node:fs';
import Provider, { errors } from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const issuer = `http://127.0.0.1:${config.port}`;

const provider = new Provider(issuer, {
  jwks: config.jwks,
  clients: config.clients,
  scopes: ['openid', 'offline_access', ...config.scopes],
  cookies: { keys: ['oauth-tests-cookie-key'] },
  clientDefaults: { id_token_signed_response_alg: 'ES256' },
  findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
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
