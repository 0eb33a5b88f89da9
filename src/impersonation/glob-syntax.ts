// The glob dialect of spec §2: the grammar and the compile errors of gobwas/glob (v0.2.3), the
// library Argo CD matches destinationServiceAccounts with. Re-implemented from its observable
// behaviour so that a pattern Argo CD rejects is rejected here with the same reason, and a pattern
// it accepts means the same thing. This file only parses; glob.ts turns the tree into a matcher.
//
// Quirks kept on purpose (each is what Argo CD users see):
// - `!` is special only as the first character inside `[...]`.
// - `{` opens a group that needs no `}`: `{a,b` means `{a,b}`; `,` and `}` are literal outside groups.
// - `]` outside a class is a literal; a trailing lone `\` is dropped.
// - A class holds either one `lo-hi` range or one run of characters, never both (`[a-bc]` fails).
// - A NUL character ends the pattern where an item starts and is skipped inside a run of text,
//   because the library uses rune 0 as its end-of-input marker.
// - U+FFFD (and a lone UTF-16 surrogate, which Go would have turned into U+FFFD) fails with
//   `could not read rune`.

export type GlobNode =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'any' } // `*` and `**`: no separators, so both match any sequence
  | { readonly kind: 'single' } // `?`
  | { readonly kind: 'list'; readonly chars: readonly number[]; readonly not: boolean } // `[abc]`
  | { readonly kind: 'range'; readonly lo: number; readonly hi: number; readonly not: boolean } // `[a-z]`
  | { readonly kind: 'alternatives'; readonly options: readonly GlobNode[][] }; // `{a,b}`

export type ParseResult = { ok: true; nodes: GlobNode[] } | { ok: false; error: string };

type TokenType =
  | 'eof'
  | 'error'
  | 'text'
  | 'any'
  | 'single'
  | 'rangeOpen'
  | 'rangeClose'
  | 'not'
  | 'lo'
  | 'between'
  | 'hi'
  | 'termsOpen'
  | 'termsClose'
  | 'separator';
interface Token {
  type: TokenType;
  raw: string;
}

const END = 0; // the library's end-of-input rune; a real NUL reads the same (see above)
const STAR = 0x2a,
  COMMA = 0x2c,
  QUESTION = 0x3f,
  BACKSLASH = 0x5c,
  OPEN_BRACKET = 0x5b,
  CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b,
  CLOSE_BRACE = 0x7d,
  BANG = 0x21,
  DASH = 0x2d;
const TEXT_BREAKERS = [QUESTION, STAR, OPEN_BRACKET, OPEN_BRACE];
const GROUP_TEXT_BREAKERS = [...TEXT_BREAKERS, CLOSE_BRACE, COMMA];

/** Tokens are produced lazily, one item at a time, so that errors surface in the library's order. */
class Lexer {
  private readonly src: string;
  private pos = 0;
  private error: string | null = null;
  private readonly queue: Token[] = [];
  private groupDepth = 0;
  private lastRune = END;
  private lastWidth = 0;
  private pushedBack = false;

  constructor(src: string) {
    this.src = src;
  }

  next(): Token {
    for (;;) {
      // A lexer error wins over tokens already queued for the same item.
      if (this.error !== null) return { type: 'error', raw: this.error };
      const token = this.queue.shift();
      if (token) return token;
      this.fetchItem();
    }
  }

  private fail(message: string): void {
    this.error = message;
  }

  private push(type: TokenType, raw: string): void {
    this.queue.push({ type, raw });
  }

  private peek(): [rune: number, width: number] {
    if (this.pos >= this.src.length) return [END, 0];
    const cp = this.src.codePointAt(this.pos) ?? END;
    if (cp === 0xfffd || (cp >= 0xd800 && cp <= 0xdfff)) {
      this.fail('could not read rune');
      return [END, 0];
    }
    return [cp, cp > 0xffff ? 2 : 1];
  }

  private read(): number {
    if (this.pushedBack) {
      this.pushedBack = false;
      this.pos += this.lastWidth;
      return this.lastRune;
    }
    const [rune, width] = this.peek();
    this.pos += width;
    this.lastRune = rune;
    this.lastWidth = width;
    return rune;
  }

  private unread(): void {
    if (this.pushedBack) {
      this.fail('could not unread rune');
      return;
    }
    this.pos -= this.lastWidth;
    this.pushedBack = true;
  }

  private fetchItem(): void {
    const r = this.read();
    if (r === END) this.push('eof', '');
    else if (r === OPEN_BRACE) {
      this.groupDepth++;
      this.push('termsOpen', '{');
    } else if (r === COMMA && this.groupDepth > 0) this.push('separator', ',');
    else if (r === CLOSE_BRACE && this.groupDepth > 0) {
      this.push('termsClose', '}');
      this.groupDepth--;
    } else if (r === OPEN_BRACKET) {
      this.push('rangeOpen', '[');
      this.fetchClass();
    } else if (r === QUESTION) this.push('single', '?');
    else if (r === STAR) {
      // `**` is one token; without separators it means the same as `*`.
      if (this.read() !== STAR) this.unread();
      this.push('any', '*');
    } else {
      this.unread();
      this.fetchText(this.groupDepth > 0 ? GROUP_TEXT_BREAKERS : TEXT_BREAKERS);
    }
  }

  private fetchClass(): void {
    let wantHi = false;
    let wantClose = false;
    let seenNot = false;
    for (;;) {
      const r = this.read();
      if (r === END) {
        this.fail('unexpected end of input');
        return;
      }
      if (wantClose) {
        if (r !== CLOSE_BRACKET) this.fail('expected close range character');
        else this.push('rangeClose', ']');
        return;
      }
      if (wantHi) {
        this.push('hi', String.fromCodePoint(r));
        wantClose = true;
        continue;
      }
      if (!seenNot && r === BANG) {
        this.push('not', '!');
        seenNot = true;
        continue;
      }
      const [n, w] = this.peek();
      if (n === DASH) {
        this.pos += w;
        this.push('lo', String.fromCodePoint(r));
        this.push('between', '-');
        wantHi = true;
        continue;
      }
      this.unread();
      this.fetchText([CLOSE_BRACKET]);
      wantClose = true;
    }
  }

  private fetchText(breakers: readonly number[]): void {
    let data = '';
    let escaped = false;
    for (;;) {
      const r = this.read();
      if (r === END) break;
      if (!escaped) {
        if (r === BACKSLASH) {
          escaped = true;
          continue;
        }
        if (breakers.includes(r)) {
          this.unread();
          break;
        }
      }
      escaped = false;
      data += String.fromCodePoint(r);
    }
    if (data !== '') this.push('text', data);
  }
}

interface Group {
  options: GlobNode[][];
  parent: Frame;
}
interface Frame {
  nodes: GlobNode[];
  group: Group | null;
}

/** Parses a pattern into its nodes, or returns the library's error message. */
export function parseGlob(pattern: string): ParseResult {
  const lexer = new Lexer(pattern);
  const root: Frame = { nodes: [], group: null };
  let frame = root;
  for (;;) {
    const token = lexer.next();
    switch (token.type) {
      case 'eof':
        return { ok: true, nodes: root.nodes };
      case 'error':
        return { ok: false, error: token.raw };
      case 'text':
        frame.nodes.push({ kind: 'text', text: token.raw });
        break;
      case 'any':
        frame.nodes.push({ kind: 'any' });
        break;
      case 'single':
        frame.nodes.push({ kind: 'single' });
        break;
      case 'termsOpen': {
        const first: GlobNode[] = [];
        const options = [first];
        frame.nodes.push({ kind: 'alternatives', options });
        frame = { nodes: first, group: { options, parent: frame } };
        break;
      }
      case 'separator': {
        // The lexer only emits a separator inside a group, so `frame.group` is set.
        const group = frame.group as Group;
        const option: GlobNode[] = [];
        group.options.push(option);
        frame = { nodes: option, group };
        break;
      }
      case 'termsClose':
        frame = (frame.group as Group).parent;
        break;
      case 'rangeOpen': {
        const result = parseClass(lexer);
        if (!result.ok) return result;
        frame.nodes.push(result.node);
        break;
      }
      default:
        return { ok: false, error: `unexpected token: ${token.raw}` };
    }
  }
}

function parseClass(lexer: Lexer): { ok: true; node: GlobNode } | { ok: false; error: string } {
  let not = false;
  let lo = 0;
  let hi = 0;
  let chars = '';
  for (;;) {
    const token = lexer.next();
    switch (token.type) {
      case 'eof':
        return { ok: false, error: 'unexpected end' };
      case 'error':
        return { ok: false, error: token.raw };
      case 'not':
        not = true;
        break;
      case 'lo':
        lo = token.raw.codePointAt(0) ?? 0;
        break;
      case 'hi': {
        hi = token.raw.codePointAt(0) ?? 0;
        if (hi < lo)
          return {
            ok: false,
            error: `hi character '${token.raw}' should be greater than lo '${String.fromCodePoint(lo)}'`,
          };
        break;
      }
      case 'text':
        chars = token.raw;
        break;
      case 'rangeClose': {
        const isRange = lo !== 0 && hi !== 0;
        const isChars = chars !== '';
        if (isRange === isChars) return { ok: false, error: 'could not parse range' };
        if (isRange) return { ok: true, node: { kind: 'range', lo, hi, not } };
        return { ok: true, node: { kind: 'list', chars: Array.from(chars, (c) => c.codePointAt(0) ?? 0), not } };
      }
      default:
        break;
    }
  }
}
