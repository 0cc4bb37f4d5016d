// @ts-check
// The rules test/README.md states, as lint rules for the test files (eslint.config.mjs scopes them; the support
// folder, where the one polling helper and the suite's deadlines live, is left out). test/lint-rules.test.ts plants a
// violation of each and checks that it is reported.

/** @typedef {import('eslint').Rule.RuleModule} RuleModule */
/** @typedef {import('estree').Node} Node */

/** Functions whose only job is to let time pass. */
const TIMERS = new Set(['setTimeout', 'setInterval']);
const SLEEPS = new Set(['sleep', 'pause', 'delay', 'wait']);
const TIMER_MODULES = new Set(['timers', 'node:timers', 'timers/promises', 'node:timers/promises']);

/** The name a call is made by: `f(...)`, `globalThis.f(...)`; a method of another object is not a timer. */
function calleeName(/** @type {Node} */ node) {
  if (node.type !== 'CallExpression') return undefined;
  const { callee } = node;
  if (callee.type === 'Identifier') return callee.name;
  if (
    callee.type === 'MemberExpression' &&
    callee.object.type === 'Identifier' &&
    callee.object.name === 'globalThis' &&
    callee.property.type === 'Identifier'
  ) {
    return callee.property.name;
  }
  return undefined;
}

const isWait = (/** @type {Node} */ node) => {
  const name = calleeName(node);
  return name !== undefined && (TIMERS.has(name) || SLEEPS.has(name));
};

/** @type {RuleModule} */
const noWallClockWait = {
  meta: {
    type: 'problem',
    docs: { description: 'A test waits for an event or a count, never for a duration.' },
    messages: {
      timer:
        '`{{name}}()` in a test: wait for the event itself, or poll a condition with `until()` ' +
        '(test/support/poll.ts); a deadline only a stuck run reaches belongs in test/support/.',
      module:
        "'{{source}}' in a test: wait for the event itself, or poll a condition with `until()` (test/support/poll.ts).",
    },
    schema: [],
  },
  create(context) {
    return {
      CallExpression(node) {
        if (isWait(node)) context.report({ node, messageId: 'timer', data: { name: calleeName(node) ?? '' } });
      },
      ImportDeclaration(node) {
        const source = String(node.source.value);
        if (TIMER_MODULES.has(source)) context.report({ node, messageId: 'module', data: { source } });
      },
    };
  },
};

/** Whether `node` holds a token by its name (`token`, `oldToken`, `view.token`) or is an `issue()` call. */
function isTokenValued(/** @type {Node} */ node) {
  const named = (/** @type {string} */ name) => /token/i.test(name) && /^[a-z_$]/.test(name);
  if (node.type === 'Identifier') return named(node.name);
  if (node.type === 'MemberExpression' && !node.computed && node.property.type === 'Identifier') {
    return named(node.property.name);
  }
  if (node.type === 'CallExpression' && node.callee.type === 'MemberExpression') {
    return node.callee.property.type === 'Identifier' && node.callee.property.name === 'issue';
  }
  if (node.type === 'AwaitExpression') return isTokenValued(node.argument);
  return false;
}

/** `undefined`, `null` or a literal: a comparison with one of those says whether there is a token, not which. */
function isPlainValue(/** @type {Node} */ node) {
  return node.type === 'Literal' || (node.type === 'Identifier' && node.name === 'undefined');
}

/** @type {RuleModule} */
const noTokenIdentity = {
  meta: {
    type: 'problem',
    docs: { description: 'Tokens in an assertion are compared with toBeSameToken, which says where they differ.' },
    messages: {
      identity:
        'A token compared with `{{operator}}` inside expect(): a failure says only `false`. Use ' +
        '`expect(a).toBeSameToken(b)` (or `.not.toBeSameToken`), which says where two tokens differ without showing them.',
    },
    schema: [],
  },
  create(context) {
    return {
      /** @param {import('estree').BinaryExpression & import('eslint').Rule.NodeParentExtension} node */
      BinaryExpression(node) {
        if (!['===', '!==', '==', '!='].includes(node.operator)) return;
        const { left, right } = node;
        if (left.type === 'PrivateIdentifier') return;
        if (isPlainValue(left) || isPlainValue(right)) return;
        if (!isTokenValued(left) && !isTokenValued(right)) return;
        // Inside the value handed to expect(), up to the nearest function.
        for (let child = /** @type {Node} */ (node), parent = node.parent; parent;) {
          if (parent.type.includes('Function')) return;
          if (parent.type === 'CallExpression' && calleeName(parent) === 'expect' && parent.arguments[0] === child) {
            context.report({ node, messageId: 'identity', data: { operator: node.operator } });
            return;
          }
          child = parent;
          parent = /** @type {any} */ (parent).parent;
        }
      },
    };
  },
};

/**
 * The awaits, waits and clock reads inside `node`, not looking into nested functions, except a promise's executor
 * (`new Promise((resolve) => setTimeout(resolve, 5))` is a wait).
 */
function scan(
  /** @type {Node} */ node,
  /** @type {{ awaits: boolean; waits: boolean; clock: boolean; deliberate: Set<number> }} */ found,
) {
  if (node.type === 'NewExpression' && node.callee.type === 'Identifier' && node.callee.name === 'Promise') {
    for (const argument of node.arguments) {
      if (argument.type === 'ArrowFunctionExpression' || argument.type === 'FunctionExpression') {
        scan(argument.body, found);
      }
    }
    return found;
  }
  if (node.type.includes('Function')) return found;
  if (node.type === 'AwaitExpression') found.awaits = true;
  if (isWait(node) && !found.deliberate.has(node.loc?.start.line ?? 0)) found.waits = true;
  if (
    node.type === 'CallExpression' &&
    node.callee.type === 'MemberExpression' &&
    node.callee.object.type === 'Identifier' &&
    ['Date', 'performance'].includes(node.callee.object.name) &&
    node.callee.property.type === 'Identifier' &&
    node.callee.property.name === 'now'
  ) {
    found.clock = true;
  }
  for (const [key, value] of Object.entries(node)) {
    if (key === 'parent') continue;
    for (const child of Array.isArray(value) ? value : [value]) {
      if (child !== null && typeof child === 'object' && typeof child.type === 'string') scan(child, found);
    }
  }
  return found;
}

/** @type {RuleModule} */
const noPollingLoop = {
  meta: {
    type: 'problem',
    docs: { description: 'One polling helper: `until()` in test/support/poll.ts.' },
    messages: {
      loop:
        'A polling loop of its own (it awaits, and sleeps or watches a deadline): use `until(condition, timeout, ' +
        'every)` from test/support/poll.ts, the one polling helper, whose deadline the machine factor stretches.',
    },
    schema: [],
  },
  create(context) {
    // A wait whose no-wall-clock-wait is disabled, with its reason, is a duration the test means (a jitter, a
    // fault's length), not a poll.
    const deliberate = new Set(
      context.sourceCode
        .getAllComments()
        .filter((comment) =>
          /^\s*eslint-disable-next-line\b[^-]*launcher-auth-tests\/no-wall-clock-wait/.test(comment.value),
        )
        .map((comment) => (comment.loc?.end.line ?? 0) + 1),
    );
    const fresh = () => ({ awaits: false, waits: false, clock: false, deliberate });
    /** @param {import('estree').WhileStatement | import('estree').DoWhileStatement | import('estree').ForStatement | import('estree').ForOfStatement | import('estree').ForInStatement} node */
    const loop = (node) => {
      const body = scan(node.body, fresh());
      const test = 'test' in node && node.test ? scan(node.test, fresh()) : body;
      if ((body.awaits || test.awaits) && (body.waits || test.clock)) context.report({ node, messageId: 'loop' });
    };
    return {
      WhileStatement: loop,
      DoWhileStatement: loop,
      ForStatement: loop,
      ForOfStatement: loop,
      ForInStatement: loop,
    };
  },
};

/** @type {RuleModule} */
const disableReason = {
  meta: {
    type: 'suggestion',
    docs: { description: 'An eslint-disable comment says why, after ` -- `.' },
    messages: { reason: 'An eslint-disable comment carries its reason: `// eslint-disable-next-line rule -- why`.' },
    schema: [],
  },
  create(context) {
    return {
      Program() {
        for (const comment of context.sourceCode.getAllComments()) {
          const text = comment.value.trim();
          if (/^eslint-disable(-next-line|-line)?\b/.test(text) && !/\s--\s+\S/.test(text)) {
            context.report({ loc: /** @type {import('estree').SourceLocation} */ (comment.loc), messageId: 'reason' });
          }
        }
      },
    };
  },
};

export default {
  meta: { name: 'launcher-auth-tests' },
  rules: {
    'no-wall-clock-wait': noWallClockWait,
    'no-token-identity': noTokenIdentity,
    'no-polling-loop': noPollingLoop,
    'disable-reason': disableReason,
  },
};
