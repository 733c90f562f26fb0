// A real OpenID Connect provider for rustiz's single sign-on tests: npm's oidc-provider (the certified Node
// implementation, installed by run_tests.sh into .peers/oidc) on 127.0.0.1, with one client and no login form.
//
// Environment: OIDC_PEERS (the folder holding node_modules/oidc-provider), PORT (0: any free port), CLIENT_ID,
// CLIENT_SECRET, ID_TOKEN_ALG (RS256 or ES256), AUTH_METHOD (client_secret_basic or client_secret_post),
// EMAIL_IN_ID_TOKEN (1: the e-mail claims ride in the ID token; 0: only userinfo has them), DEFAULT_ACCOUNT
// (who signs in when the login page is opened without ?account=, as a real browser opens it).
// Prints one JSON line {"issuer": ...} once it listens.
//
// The login: /interaction/<uid>?account=<id> signs in the account <id> at once (the test's browser adds the
// query), and consent is given without a page. An account id is `<email>`, `unverified:<email>` (email_verified false), and either may end with
// `#<tamper>`: the ID token the token endpoint answers is then altered, and signed again with the provider's
// own key (or not, for `signature` and `none`), to prove rustiz refuses it:
//   audience (another aud), expired (exp an hour ago), nonce (another nonce), issuer (another iss),
//   signature (one bit of the signature flipped), none (alg none, no signature).
import { createPrivateKey, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const env = process.env;
const { default: Provider } = await import(pathToFileURL(path.join(env.OIDC_PEERS, 'node_modules/oidc-provider/lib/index.js')));
const alg = env.ID_TOKEN_ALG || 'RS256';
const emailInIdToken = env.EMAIL_IN_ID_TOKEN !== '0';

// A fresh key each start (a restart is a key rotation, with a new kid).
const pair = alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('rsa', { modulusLength: 2048 });
const privateJwk = { ...pair.privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg, use: 'sig' };

function account(id) {
  const [who] = id.split('#');
  const verified = !who.startsWith('unverified:');
  const email = who.replace(/^unverified:/, '');
  return { accountId: id, claims: () => ({ sub: id, email, email_verified: verified }) };
}

const port = Number(env.PORT || 0);
// The issuer must be known before the provider is made: bind first, then hand the socket to Koa.
const http = await import('node:http');
const listener = http.createServer();
await new Promise((resolve) => listener.listen(port, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${listener.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: env.CLIENT_ID,
    client_secret: env.CLIENT_SECRET,
    // RFC 8252: a loopback redirect URI of a native client matches on any port (rustiz's tests bind free ports).
    application_type: 'native',
    redirect_uris: ['http://127.0.0.1/auth/oidc/callback'],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    id_token_signed_response_alg: alg,
    token_endpoint_auth_method: env.AUTH_METHOD || 'client_secret_basic',
  }],
  jwks: { keys: [privateJwk] },
  findAccount: (ctx, id) => account(id),
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  conformIdTokenClaims: !emailInIdToken,
  pkce: { required: () => true },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  cookies: { keys: ['rustiz-test-cookie-key'] },
});

const b64 = (data) => Buffer.from(data).toString('base64url');
const privateKey = createPrivateKey({ key: privateJwk, format: 'jwk' });

function tampered(idToken, how) {
  const [head, body] = idToken.split('.');
  const header = JSON.parse(Buffer.from(head, 'base64url'));
  const claims = JSON.parse(Buffer.from(body, 'base64url'));
  const now = Math.floor(Date.now() / 1000);
  if (how === 'audience') claims.aud = 'another-client';
  if (how === 'expired') { claims.iat = now - 3000; claims.exp = now - 2400; }
  if (how === 'nonce') claims.nonce = 'not-this-sign-in';
  if (how === 'issuer') claims.iss = 'http://127.0.0.1:9/another-issuer';
  if (how === 'none') return `${b64(JSON.stringify({ alg: 'none' }))}.${b64(JSON.stringify(claims))}.`;
  const input = `${b64(JSON.stringify(header))}.${b64(JSON.stringify(claims))}`;
  const signature = sign('sha256', Buffer.from(input), alg === 'ES256' ? { key: privateKey, dsaEncoding: 'ieee-p1363' } : privateKey);
  if (how === 'signature') signature[signature.length - 1] ^= 1;
  return `${input}.${b64(signature)}`;
}

provider.use(async (ctx, next) => {
  if (ctx.method === 'GET' && ctx.path.startsWith('/interaction/')) {
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    let result;
    const accountId = ctx.query.account || env.DEFAULT_ACCOUNT;
    if (details.prompt.name === 'login' && accountId) {
      result = { login: { accountId } };
    } else if (details.prompt.name === 'consent') {  // (a first-party client: consent is given at once)
      const grant = details.grantId ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
      const missing = details.prompt.details;
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      result = { consent: { grantId: await grant.save() } };
    } else {
      ctx.status = 400;
      ctx.body = `this test provider only signs in: add ?account=<id> (prompt ${details.prompt.name})`;
      return;
    }
    ctx.redirect(await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: true }));
    return;
  }
  await next();
  if (ctx.path === '/token' && ctx.status === 200 && ctx.body?.id_token) {
    const claims = JSON.parse(Buffer.from(ctx.body.id_token.split('.')[1], 'base64url'));
    const how = String(claims.sub).split('#')[1];
    if (how) ctx.body = { ...ctx.body, id_token: tampered(ctx.body.id_token, how) };
  }
});

listener.on('request', provider.callback());
process.stdout.write(`${JSON.stringify({ issuer, kid: privateJwk.kid })}\n`);
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
