/** The downloadable fraud report: a small generated PDF summarising the results. */
import { PDFDocument, StandardFonts } from 'pdf-lib';
import type { Json } from './submissions.js';

interface ReportInput {
  submissionId: string;
  queryId: string | null;
  fraud: Json;
  decision: Json | null;
}

/** Keeps only characters the standard fonts can encode (WinAnsi). */
function printable(value: unknown): string {
  return String(value ?? '')
    .replace(/[^\x20-\x7e]/g, '?')
    .slice(0, 110);
}

export async function renderReport(input: ReportInput): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.setTitle(`Fraud report ${input.submissionId}`);
  doc.setProducer('docstream sandbox');
  doc.setCreator('docstream sandbox');
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const page = doc.addPage([595, 842]);
  let y = 800;
  const line = (text: string, size = 11) => {
    if (y < 40) return;
    page.drawText(printable(text), { x: 40, y, size, font });
    y -= size + 7;
  };
  line('Document analysis report (sandbox)', 16);
  line(`Submission: ${input.submissionId}`);
  line(`Query id: ${input.queryId ?? '-'}`);
  line(`Analysed: ${printable(input.fraud.analysis_time)}`);
  line(
    `File: ${printable(input.fraud.file_type)} (${printable(input.fraud.mime_type)}), pages: ${printable(input.fraud.num_pages)}`,
  );
  line(`SHA-256: ${printable(input.fraud.sha256)}`);
  line(`Fraud score: ${printable(input.fraud.score)}`, 13);
  const indicators = Array.isArray(input.fraud.indicators) ? (input.fraud.indicators as Json[]) : [];
  line(`Indicators: ${indicators.length}`);
  for (const indicator of indicators) line(`- [${printable(indicator.type)}] ${printable(indicator.title)}`);
  if (input.decision) {
    line(`Adaptive Decision: ${printable(input.decision.decision)}`, 13);
    const reason = (input.decision.reason ?? {}) as Record<string, { label?: string }>;
    for (const [name, r] of Object.entries(reason)) line(`- ${name}: ${printable(r.label)}`);
  }
  return doc.save();
}
