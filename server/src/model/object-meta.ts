import { z } from 'zod';

/** The part of ObjectMeta that IDE Cloud reads; everything else passes through untouched. */
export const ObjectMetaSchema = z
  .object({
    name: z.string(),
    namespace: z.string().optional(),
    uid: z.string().optional(),
    generation: z.number().int().optional(),
    resourceVersion: z.string().optional(),
    creationTimestamp: z.union([z.string(), z.date()]).optional(),
    deletionTimestamp: z.union([z.string(), z.date()]).optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  })
  .passthrough();
