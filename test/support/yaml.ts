// YAML documents as plain objects, parsed as YAML 1.1 (so 0644 is 420, as kubectl reads it).
import { readFile } from 'node:fs/promises';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from './kube.ts';

export function parseYamlDocuments(text: string, source = 'YAML'): KubeObject[] {
  const objects: KubeObject[] = [];
  parseAllDocuments(text, { version: '1.1' }).forEach((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`${source}, document ${i + 1}: ${doc.errors[0]?.message}`);
    const value: unknown = doc.toJS();
    if (value !== null && value !== undefined) objects.push(value as KubeObject);
  });
  return objects;
}

export async function readYamlFile(path: string): Promise<KubeObject[]> {
  return parseYamlDocuments(await readFile(path, 'utf8'), path);
}
