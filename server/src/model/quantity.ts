import { z } from 'zod';

// The Kubernetes resource.Quantity grammar (e.g. 500M, 200m, 2, 1.5Gi), so a bad value is refused at
// the API server instead of breaking the Deployment the operator writes later.
const QUANTITY = '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$';

export const QuantitySchema = z.string().regex(new RegExp(QUANTITY));
