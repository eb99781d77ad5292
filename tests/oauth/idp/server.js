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
  // Dynamic registration is for the hosts people sign in with: the authorization-code grant (and
  // refresh) only. A stranger must not register a client-credentials client and get a token with
  // no person signing in; scripts are pre-registered (`clients`).
  extraClientMetadata: {
    properties: ['svc_registered_by'],
    validator: (ctx, _key, _value, metadata) => {
      const registering = ['registration', 'client_update'].includes(ctx?.oidc?.route);
      const people = ['authorization_code', 'refresh_token'];
      if (registering && (metadata.grant_types ?? []).some((grant) => !people.includes(grant))) {
        throw new errors.InvalidClientMetadata(
          'a dynamically registered client may use the authorization_code and refresh_token grants only',
        );
      }
    },
  },
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
