/**
 * Makes `require('vscode')` work outside VS Code, for tests that load vscode-languageclient
 * itself: the small fake of `./vscode` where it has a member, and a do-nothing stand-in
 * (callable, constructible, iterable as empty) for everything else the library touches.
 * Import it before any module that imports `vscode`.
 */
import Module from 'node:module';
import { createFakeVscode } from './vscode';

/** A member the fake lacks: every property is another stand-in, calls return one. */
function standIn(name: string): unknown {
  const members = new Map<PropertyKey, unknown>();
  return new Proxy(function () {}, {
    get(_target, prop) {
      if (prop === 'then') return undefined; // not a promise
      if (prop === Symbol.iterator) return function* () {};
      if (prop === Symbol.toPrimitive || prop === 'toString') return () => name;
      if (!members.has(prop)) members.set(prop, standIn(`${name}.${String(prop)}`));
      return members.get(prop);
    },
    apply: () => standIn(`${name}()`),
    construct: () => standIn(`new ${name}`) as object,
  });
}

/** `value`, with a stand-in for each member it lacks (objects one level down too). */
export function withStandIns(value: Record<string, unknown>, name: string): unknown {
  return new Proxy(value, {
    get(target, prop) {
      if (prop in target) {
        const member = target[prop as string];
        const plainObject = typeof member === 'object' && member !== null && Object.getPrototypeOf(member) === Object.prototype;
        return plainObject ? withStandIns(member as Record<string, unknown>, `${name}.${String(prop)}`) : member;
      }
      if (prop === 'then') return undefined;
      return standIn(`${name}.${String(prop)}`);
    },
  });
}

export const fake = createFakeVscode();
const base = fake.vscode as unknown as Record<string, unknown>;
base['version'] = '1.95.0';
base['LogLevel'] = { Off: 0, Trace: 1, Debug: 2, Info: 3, Warning: 4, Error: 5 };
(base['workspace'] as Record<string, unknown>)['getConfiguration'] = () => ({ get: <T>(_key: string, fallback?: T) => fallback });
export const vscodeModule = withStandIns(base, 'vscode');

type Load = (request: string, parent: unknown, isMain: boolean) => unknown;
const loader = Module as unknown as { _load: Load };
const original = loader._load;
loader._load = function (request: string, parent: unknown, isMain: boolean): unknown {
  return request === 'vscode' ? vscodeModule : original.call(this, request, parent, isMain);
};
