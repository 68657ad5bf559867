package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderflow/orderflow/platform/database"
)

// ErrNotFound is a record the tenant does not have.
var ErrNotFound = errors.New("record not found")

// Record is one workflow of a kind that keeps no table of its own: what its
// client reads (Body, a JSON object), and whether it has settled.
type Record struct {
	Tenant, Kind, ID, WorkflowID string
	Status                       string
	Final                        bool
	Fingerprint                  []byte
	Body                         json.RawMessage
	CreatedAt, UpdatedAt         time.Time
}

// Store is the kind_records table, the only code that reads or writes it.
type Store struct{ db database.DB }

// NewStore returns the store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{db: pool} }

const recordColumns = `tenant, kind, id, workflow_id, status, final, fingerprint, body, created_at, updated_at`

func scanRecord(row pgx.Row) (Record, error) {
	var r Record
	err := row.Scan(&r.Tenant, &r.Kind, &r.ID, &r.WorkflowID, &r.Status, &r.Final, &r.Fingerprint, &r.Body, &r.CreatedAt, &r.UpdatedAt)
	return r, err
}

var recordTable = Table[Record]{Name: "kind_records", Columns: recordColumns, Scan: scanRecord, NotFound: ErrNotFound}

// Record writes r if its workflow has no record yet (the ingress and the
// workflow's first step both do, whichever comes first) and returns the record
// as it stands.
func (s *Store) Record(ctx context.Context, r Record) (Record, error) {
	if !json.Valid(r.Body) {
		return Record{}, fmt.Errorf("record %s: body is not JSON", r.ID)
	}
	row, err := scanRecord(s.db.QueryRow(ctx, `
		INSERT INTO kind_records (tenant, kind, id, workflow_id, status, final, fingerprint, body)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT DO NOTHING
		RETURNING `+recordColumns, r.Tenant, r.Kind, r.ID, r.WorkflowID, r.Status, r.Final, r.Fingerprint, r.Body))
	if errors.Is(err, pgx.ErrNoRows) {
		return s.GetByWorkflow(ctx, r.Tenant, r.WorkflowID) // it existed: read it
	}
	if err != nil {
		return Record{}, fmt.Errorf("record %s: %w", r.ID, err)
	}
	return row, nil
}

// Move sets the status and body of the tenant's record of a workflow; a final
// record never moves again. moved is false for a final record or none.
func (s *Store) Move(ctx context.Context, tenant, workflowID, status string, final bool, body json.RawMessage) (moved bool, err error) {
	if !json.Valid(body) {
		return false, fmt.Errorf("move %s: body is not JSON", workflowID)
	}
	tag, err := s.db.Exec(ctx, `UPDATE kind_records SET status = $3, final = $4, body = $5, updated_at = now()
		WHERE tenant = $1 AND workflow_id = $2 AND NOT final`, tenant, workflowID, status, final, body)
	if err != nil {
		return false, fmt.Errorf("move %s to %s: %w", workflowID, status, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Get returns one of the tenant's records by its public ID.
func (s *Store) Get(ctx context.Context, tenant, id string) (Record, error) {
	return recordTable.GetBy(ctx, s.db, "id", tenant, id)
}

// GetByWorkflow returns the tenant's record of a workflow.
func (s *Store) GetByWorkflow(ctx context.Context, tenant, workflowID string) (Record, error) {
	return recordTable.GetBy(ctx, s.db, "workflow_id", tenant, workflowID)
}
