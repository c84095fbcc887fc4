/**
 * Entry point: builds the real dependencies (the `vscode` API, vscode-languageclient, the
 * machine) and hands them to `ReadManyController`, which wires every feature.
 */
import * as vscode from 'vscode';
import { ReadManyController, type ReadManyApi } from './controller';
import { createLanguageClient } from './languageClient';
import { nodeHost } from './nodeHost';

let controller: ReadManyController | undefined;

export function activate(context: vscode.ExtensionContext): ReadManyApi {
  controller = new ReadManyController(vscode, { createClient: createLanguageClient, host: nodeHost });
  context.subscriptions.push(controller);
  void controller.start();
  return controller.publicApi;
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}
