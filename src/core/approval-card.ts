/** A platform-neutral approval card: adapters render it as Block Kit, Discord components or text. */
export interface ApprovalCard {
  envelopeId: string;
  nonce: string;
  kind: 'tools' | 'question';
  calls: Array<{
    index: number;
    id: string;
    tool: string;
    argsPretty: string;
    risk: 'low' | 'medium' | 'high';
    detail?: string;
  }>;
  question?: string;
  options?: string[];
  planHashPrefix: string;
  expiresAt: Date;
  requesterLabel: string;
  state: 'pending' | 'decided' | 'expired' | 'refused';
  decisions?: Array<{ index: number; approved: boolean; answer?: string; by: string }>;
  decidedAt?: Date;
}
