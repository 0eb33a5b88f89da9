// The one rule for where a repository credential may go (src/repository/url.ts): the scheme, host
// and port must be the credential's, a URL naming a user gets only a template naming the same
// user, and a template's path must end at a `/` boundary of the URL's path. Property tests hold
// it to Node's own URL parser for http(s): a match always means the same origin and a path under
// the template's.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  parseRepositoryURL,
  repositoryURLRefusal,
  resolveDotSegments,
  sameRepository,
  templateCoverage,
} from '../../src/repository/url.ts';

const covers = (template: string, url: string) => templateCoverage(template, url) !== undefined;

describe("a credential template's reach", () => {
  const corp = 'https://git.corp.example';

  it('gives nothing to a host the tenant picks by writing the template as user information', () => {
    assert.equal(covers(corp, 'https://git.corp.example@evil.test/x.git'), false);
    assert.equal(covers(corp, 'https://git.corp.example:pw@evil.test/x.git'), false);
  });

  it('gives nothing to a look-alike host whose name starts with the template host', () => {
    assert.equal(covers(corp, 'https://git.corp.example.evil.test/x'), false);
    assert.equal(covers('https://127.0.0.1', 'https://127.0.0.10/x'), false);
  });

  it('gives nothing to another port, or another scheme, of the same host', () => {
    assert.equal(covers(corp, 'https://git.corp.example:8443/x'), false);
    assert.equal(covers(corp, 'http://git.corp.example/x'), false);
    assert.equal(covers('https://git.corp.example:8443', 'https://git.corp.example/x'), false);
  });

  it("gives nothing to a path that only starts with the template's path", () => {
    assert.equal(covers('https://git.corp.example/team', 'https://git.corp.example/team-b/x'), false);
    assert.equal(covers('https://git.corp.example/team', 'https://git.corp.example/team/x'), true);
    assert.equal(covers('https://git.corp.example/team/', 'https://git.corp.example/team'), true);
  });

  it('gives nothing to a URL with a dot segment or an encoded slash: it does not say where it leads', () => {
    assert.equal(covers('https://git.corp.example/team-a', 'https://git.corp.example/team-a/../evil/x'), false);
    assert.equal(covers('https://git.corp.example/team-a', 'https://git.corp.example/team-a/%2e%2e/evil'), false);
    assert.equal(covers('https://git.corp.example/team-a', 'https://git.corp.example/team-a%2F..%2Fevil'), false);
    assert.equal(covers('https://git.corp.example/team-a', 'https://git.corp.example/team-a\\..\\evil'), false);
  });

  it('gives nothing to a URL naming a user unless the template names the same user', () => {
    assert.equal(covers(corp, 'https://bob@git.corp.example/x'), false);
    assert.equal(covers('https://bob@git.corp.example', 'https://bob@git.corp.example/x'), true);
    assert.equal(covers('https://bob@git.corp.example', 'https://eve@git.corp.example/x'), false);
    assert.equal(covers('git@github.com:org', 'git@github.com:org/repo.git'), true);
    assert.equal(covers('git@github.com:org', 'evil@github.com:org/repo.git'), false);
  });

  it('reads spellings of the same place as the same: host case, default port, .git, slashes, encoded letters', () => {
    assert.equal(covers(corp, 'https://GIT.Corp.Example:443/team/x.git'), true);
    assert.equal(covers('https://git.corp.example/Team', 'https://git.corp.example//team/%78.git/'), true);
    assert.equal(covers('ssh://git@github.com/org', 'git@github.com:org/repo'), true);
    assert.equal(covers('ssh://git@github.com:2222/org', 'git@github.com:org/repo'), false);
    assert.equal(covers('oci://ghcr.io/org', 'ghcr.io/org/charts'), true);
    assert.equal(covers('https://[::1]:8443/x', 'https://[0::1]:8443/x/y'), false, 'addresses are compared as written');
  });

  it('the deeper template wins, and a repository Secret is the same repository only', () => {
    assert.equal(templateCoverage('https://h/org/team', 'https://h/org/team/app'), 2);
    assert.equal(templateCoverage('https://h', 'https://h/org/team/app'), 0);
    assert.equal(sameRepository('https://h/org/app.git', 'https://H:443/org/app/'), true);
    assert.equal(sameRepository('https://h/org/app', 'https://h/org/app/x'), false);
    assert.equal(sameRepository('https://h/org/app', 'https://u@h/org/app'), false);
  });
});

describe('a repository URL that leads elsewhere than it reads', () => {
  it('is refused, saying where it would lead, and is judged by sourceRepos as where it leads', () => {
    assert.equal(
      repositoryURLRefusal('https://host/team-a/../evil'),
      "its path has a '..' segment, so it does not say which repository it is (it would be read as 'https://host/evil')",
    );
    assert.equal(resolveDotSegments('https://host/team-a/./b/../../evil/x.git?q'), 'https://host/evil/x.git?q');
    assert.equal(resolveDotSegments('git@host:team-a/../evil'), 'git@host:evil');
    assert.equal(resolveDotSegments('https://host/../../x'), 'https://host/x');
    assert.equal(resolveDotSegments('https://host/a/b'), 'https://host/a/b');
    assert.match(repositoryURLRefusal('https://host/a%2Fb') ?? '', /encoded \//);
  });

  it('local paths and other shapes are left to the renderer, which judges transports', () => {
    assert.equal(repositoryURLRefusal('/srv/repo/../x'), undefined);
    assert.equal(repositoryURLRefusal('file:///srv/repo'), undefined);
    assert.equal(repositoryURLRefusal('https://host/a.b/c..d/.e'), undefined);
  });
});

// --- properties ---------------------------------------------------------------------------------

const hosts = ['git.corp.example', 'GIT.corp.example', 'git.corp.example.evil', 'evil', '127.0.0.1', '127.0.0.10'];
const segment = fc.constantFrom(
  'org',
  'Org',
  'team',
  'team-a',
  'x.git',
  '..',
  '.',
  '%2e%2e',
  '%2F',
  '%41',
  '',
  'a b',
  '@',
);
const httpURL = fc
  .record({
    scheme: fc.constantFrom('https', 'http', 'HTTPS'),
    user: fc.option(fc.constantFrom('bob', 'git.corp.example', 'eve', 'bob:pw'), { nil: undefined }),
    host: fc.constantFrom(...hosts),
    port: fc.option(fc.constantFrom('443', '80', '8443', '', '0443'), { nil: undefined }),
    path: fc.array(segment, { maxLength: 4 }),
    slash: fc.boolean(),
  })
  .map(
    (u) =>
      `${u.scheme}://${u.user ? `${u.user}@` : ''}${u.host}${u.port !== undefined ? `:${u.port}` : ''}` +
      `${u.path.length > 0 ? `/${u.path.join('/')}` : ''}${u.slash ? '/' : ''}`,
  );
const anyText = fc.oneof(httpURL, fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 30 }));

const effectivePort = (u: URL) => u.port || (u.protocol === 'https:' ? '443' : '80');
const pathSegments = (u: URL) =>
  u.pathname
    .split('/')
    .filter((s) => s !== '')
    .map((s) => decodeURIComponent(s).toLowerCase())
    .map((s, i, all) => (i === all.length - 1 && s.endsWith('.git') ? s.slice(0, -4) : s))
    .filter((s) => s !== '');

describe('the rule, for any URL and template', () => {
  it('a match implies the same origin (as Node parses it), the same user, and a path at a / boundary', () => {
    fc.assert(
      fc.property(httpURL, httpURL, (template, url) => {
        if (!covers(template, url)) return;
        const t = new URL(template);
        const u = new URL(url);
        assert.equal(u.protocol, t.protocol);
        assert.equal(u.hostname, t.hostname);
        assert.equal(effectivePort(u), effectivePort(t));
        if (u.username !== '') assert.equal(decodeURIComponent(u.username), decodeURIComponent(t.username));
        // Node resolves dot segments while it parses: the raw URL must have had none to match.
        assert.ok(!/\/(\.|%2e){1,2}(\/|$)/i.test(url), url);
        const ts = pathSegments(t);
        const us = pathSegments(u);
        assert.ok(ts.length <= us.length && ts.every((s, i) => s === us[i]), `${template} -> ${url}`);
      }),
      { numRuns: 2000 },
    );
  });

  it('never throws, and any URL covers itself or is refused with a reason', () => {
    fc.assert(
      fc.property(anyText, anyText, (a, b) => {
        templateCoverage(a, b);
        sameRepository(a, b);
        resolveDotSegments(a);
        const p = parseRepositoryURL(a);
        if (p.ok) assert.ok(covers(a, a) && sameRepository(a, a), a);
        else assert.ok(p.why.length > 0);
      }),
      { numRuns: 2000 },
    );
  });

  it('respelling a URL (host case, default port, trailing .git or /) changes nothing', () => {
    fc.assert(
      fc.property(httpURL, httpURL, (template, url) => {
        const respelled = url.replace(
          /^(\w+:\/\/(?:[^@/]*@)?)([^/:]+)/,
          (_m, head: string, host: string) => `${head}${host.toUpperCase()}`,
        );
        assert.equal(covers(template, respelled), covers(template, url));
        assert.equal(covers(template, `${url.replace(/\/+$/, '')}/`), covers(template, url.replace(/\/+$/, '')));
      }),
      { numRuns: 1000 },
    );
  });
});
