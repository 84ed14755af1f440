/**
 * What `src/kafka/` offers the rest of the code is in Kafka's terms: no type that code outside the
 * folder imports from it (classes, interfaces, functions, their public members, parameters and
 * results, followed through the folder's own types) is declared by kafkajs. A move to another
 * client then changes this folder alone.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const src = join(root, 'src');
const kafkaDir = join(src, 'kafka');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [p] : [];
  });
}

/**
 * For each module of `src/kafka/`, the names code outside the folder imports from it, each with
 * whether it is imported as a value anywhere (a class's constructor is then offered too) or as a
 * type only.
 */
function importedFromOutside(): Map<string, Map<string, boolean>> {
  const imported = new Map<string, Map<string, boolean>>();
  const importRe = /import\s+(type\s+)?\{([^}]*)\}\s+from\s+'([^']+)'/g;
  for (const file of sourceFiles(src)) {
    if (file.startsWith(kafkaDir + '/')) continue;
    for (const m of readFileSync(file, 'utf8').matchAll(importRe)) {
      const target = resolve(dirname(file), m[3]!).replace(/\.js$/, '.ts');
      if (!target.startsWith(kafkaDir + '/')) continue;
      const names = imported.get(target) ?? new Map<string, boolean>();
      for (const part of m[2]!.split(',')) {
        const typeOnly = m[1] !== undefined || /^\s*type\s/.test(part);
        const name = part
          .replace(/^\s*type\s+/, '')
          .split(/\s+as\s+/)[0]!
          .trim();
        if (name) names.set(name, (names.get(name) ?? false) || !typeOnly);
      }
      imported.set(target, names);
    }
  }
  return imported;
}

function fromKafkajs(decl: ts.Declaration): boolean {
  return decl.getSourceFile().fileName.includes('/node_modules/kafkajs/');
}

function isPublic(decl: ts.Declaration): boolean {
  const flags = ts.getCombinedModifierFlags(decl);
  return (
    (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) === 0 &&
    !ts.isPrivateIdentifier((decl as ts.NamedDeclaration).name ?? decl)
  );
}

/**
 * Every kafkajs-declared type reachable from `symbol`'s public surface, as "path: type": a type's
 * members, and with `asValue` a class's constructor or a function's signature as well.
 */
function kafkajsTypesIn(checker: ts.TypeChecker, symbol: ts.Symbol, label: string, asValue = true): string[] {
  const found: string[] = [];
  const seen = new Set<ts.Type>();
  const visitType = (type: ts.Type, path: string, depth: number): void => {
    if (seen.has(type) || depth > 6) return;
    seen.add(type);
    const declared = (type.aliasSymbol ?? type.getSymbol())?.getDeclarations() ?? [];
    if (declared.some(fromKafkajs)) {
      found.push(`${path}: ${checker.typeToString(type)}`);
      return;
    }
    // Only this folder's own types are followed; the standard library's and other packages' are not.
    const ours = declared.length === 0 || declared.some((d) => d.getSourceFile().fileName.startsWith(src));
    for (const t of type.aliasTypeArguments ?? []) visitType(t, path, depth + 1);
    if (type.isUnionOrIntersection()) for (const t of type.types) visitType(t, path, depth + 1);
    if ((type.flags & ts.TypeFlags.Object) !== 0) {
      for (const t of checker.getTypeArguments(type as ts.TypeReference) ?? []) visitType(t, path, depth + 1);
    }
    if (!ours) return;
    for (const sig of [...type.getCallSignatures(), ...type.getConstructSignatures()]) {
      for (const p of sig.getParameters()) {
        const decl = p.valueDeclaration;
        if (decl) visitType(checker.getTypeOfSymbolAtLocation(p, decl), `${path}(${p.name})`, depth + 1);
      }
      visitType(sig.getReturnType(), `${path}()`, depth + 1);
    }
    for (const prop of type.getProperties()) {
      const decl = prop.valueDeclaration ?? prop.declarations?.[0];
      if (!decl || !isPublic(decl)) continue;
      visitType(checker.getTypeOfSymbolAtLocation(prop, decl), `${path}.${prop.name}`, depth + 1);
    }
  };
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  const decl = target.valueDeclaration ?? target.declarations?.[0];
  if (!decl) return found;
  if (target.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)) {
    visitType(checker.getDeclaredTypeOfSymbol(target), label, 0);
  }
  if (asValue && target.flags & ts.SymbolFlags.Value)
    visitType(checker.getTypeOfSymbolAtLocation(target, decl), label, 0);
  return found;
}

const compilerOptions: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  strict: true,
  skipLibCheck: true,
  noEmit: true,
};

describe("src/kafka/'s surface", () => {
  it('offers code outside the folder no type declared by kafkajs', () => {
    const imported = importedFromOutside();
    expect(imported.size).toBeGreaterThan(5);
    const program = ts.createProgram([...imported.keys()], compilerOptions);
    const checker = program.getTypeChecker();
    const leaks: string[] = [];
    for (const [file, names] of imported) {
      const sf = program.getSourceFile(file);
      expect(sf).toBeDefined();
      const moduleSymbol = checker.getSymbolAtLocation(sf!);
      const exports = moduleSymbol ? checker.getExportsOfModule(moduleSymbol) : [];
      for (const [name, asValue] of names) {
        const symbol = exports.find((s) => s.name === name);
        expect({ file: relative(root, file), name, exported: symbol !== undefined }).toEqual({
          file: relative(root, file),
          name,
          exported: true,
        });
        leaks.push(...kafkajsTypesIn(checker, symbol!, `${relative(src, file)} ${name}`, asValue));
      }
    }
    expect(leaks).toEqual([]);
  });

  it('would see a kafkajs type offered outside the folder', () => {
    // The same walk over an export the folder keeps to itself, whose result holds kafkajs's Admin
    // in a property: the check above can fail.
    const file = join(kafkaDir, 'group-readings.ts');
    const program = ts.createProgram([file], compilerOptions);
    const checker = program.getTypeChecker();
    const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(file)!)!);
    const adminWithCluster = exports.find((s) => s.name === 'adminWithCluster');
    expect(adminWithCluster).toBeDefined();
    expect(kafkajsTypesIn(checker, adminWithCluster!, 'adminWithCluster')).toEqual([
      expect.stringMatching(/^adminWithCluster\(kafka\): Kafka$/),
      expect.stringMatching(/^adminWithCluster\(\)\.admin: Admin$/),
    ]);
  });
});
