// JSON values as Python's `json` module sees them, so Berth can re-serialise parts of a
// langgraph.json byte for byte as the LangGraph CLI does (`json.dumps` into ENV lines).
// Plain JavaScript values cannot carry that: objects reorder integer-like keys ("1" before
// "a") and numbers forget whether they were written `1` or `1.0`, which Python prints
// differently. So objects are Maps (insertion order, a repeated key keeps its first position
// and takes the last value, as a Python dict does) and numbers keep their source text.
import { type ValueNode, parse as parseJsonTree } from '@humanwhocodes/momoa';

/** A JSON number as written in the source, e.g. `10`, `1.0`, `2e-5`. */
export class JsonNumber {
  constructor(readonly source: string) {}

  /** Python's json.loads makes an int of a number without fraction or exponent, else a float. */
  get isInteger(): boolean {
    return !/[.eE]/.test(this.source);
  }

  get value(): number {
    return Number(this.source);
  }
}

export type OrderedJson = null | boolean | string | JsonNumber | OrderedJson[] | OrderedObject;
export type OrderedObject = Map<string, OrderedJson>;

export class JsonSyntaxError extends Error {}

/** Parses strict JSON (no comments, trailing commas, NaN or BOM, as Python's json.load). */
export function parseOrderedJson(text: string): OrderedJson {
  let tree: ValueNode;
  try {
    tree = parseJsonTree(text, { mode: 'json', ranges: true }).body;
  } catch (error) {
    throw new JsonSyntaxError(`is not valid JSON: ${(error as Error).message}`);
  }
  try {
    // momoa lets raw control characters through inside strings; JSON (and Python) do not.
    JSON.parse(text);
  } catch (error) {
    throw new JsonSyntaxError(`is not valid JSON: ${(error as Error).message}`);
  }
  return fromNode(tree, text);
}

function fromNode(node: ValueNode, text: string): OrderedJson {
  switch (node.type) {
    case 'Null':
      return null;
    case 'Boolean':
    case 'String':
      return node.value;
    case 'Number': {
      const [start, end] = node.range ?? [node.loc.start.offset, node.loc.end.offset];
      return new JsonNumber(text.slice(start, end));
    }
    case 'Array':
      return node.elements.map((element) => fromNode(element.value, text));
    case 'Object': {
      const object: OrderedObject = new Map();
      for (const member of node.members) {
        const name = member.name.type === 'String' ? member.name.value : member.name.name;
        object.set(name, fromNode(member.value, text));
      }
      return object;
    }
    default:
      throw new JsonSyntaxError(`is not valid JSON: unexpected ${node.type}`);
  }
}

export function isOrderedObject(value: OrderedJson | undefined): value is OrderedObject {
  return value instanceof Map;
}

/** Plain JavaScript value (for schema validation); own properties only, so `__proto__` stays data. */
export function toPlain(value: OrderedJson): unknown {
  if (value instanceof JsonNumber) return value.value;
  if (Array.isArray(value)) return value.map(toPlain);
  if (value instanceof Map) {
    const object: Record<string, unknown> = {};
    for (const [key, member] of value) {
      Object.defineProperty(object, key, { value: toPlain(member), enumerable: true, writable: true, configurable: true });
    }
    return object;
  }
  return value;
}

export function cloneOrdered(value: OrderedJson): OrderedJson {
  if (Array.isArray(value)) return value.map(cloneOrdered);
  if (value instanceof Map) return new Map([...value].map(([key, member]) => [key, cloneOrdered(member)]));
  return value;
}

/** `json.dumps(value)` with Python's defaults: `", "` and `": "` separators, ASCII-only output. */
export function pythonJsonDumps(value: OrderedJson): string {
  if (value === null) return 'null';
  if (value === true) return 'true';
  if (value === false) return 'false';
  if (typeof value === 'string') return pythonJsonString(value);
  if (value instanceof JsonNumber) return value.isInteger ? pythonIntRepr(value.source) : pythonFloatRepr(value.value);
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(', ')}]`;
  const members = [...value].map(([key, member]) => `${pythonJsonString(key)}: ${pythonJsonDumps(member)}`);
  return `{${members.join(', ')}}`;
}

const SHORT_ESCAPES: Record<string, string> = {
  '\\': '\\\\',
  '"': '\\"',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};

/** Everything outside printable ASCII becomes `\uXXXX` (lower-case hex, UTF-16 units as Python writes them). */
function pythonJsonString(text: string): string {
  const escaped = text.replace(/[\\"]|[^ -~]/g, (char) => {
    return SHORT_ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
  return `"${escaped}"`;
}

/** Python ints are exact at any size; the only spelling JSON allows that Python changes is `-0`. */
function pythonIntRepr(source: string): string {
  return /^-0+$/.test(source) ? '0' : source;
}

/**
 * `repr(float)`: the shortest digits that round-trip (as JavaScript also finds), written in
 * exponent form when the decimal exponent is below -4 or at least 16, with a two-digit exponent
 * at least, and `.0` on integral values.
 */
export function pythonFloatRepr(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return 'Infinity';
  if (value === Number.NEGATIVE_INFINITY) return '-Infinity';
  const sign = value < 0 || Object.is(value, -0) ? '-' : '';
  if (value === 0) return `${sign}0.0`;
  const [mantissa = '', exponentText = '0'] = Math.abs(value).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= 16) {
    const fraction = digits.length > 1 ? `.${digits.slice(1)}` : '';
    const exponentSign = exponent < 0 ? '-' : '+';
    return `${sign}${digits[0]}${fraction}e${exponentSign}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
  const fraction = digits.slice(exponent + 1);
  return `${sign}${whole}.${fraction === '' ? '0' : fraction}`;
}
