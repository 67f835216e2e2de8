package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/core"
)

// userJSON is a user as `user list --json` prints it: never the password
// hash, only whether there is one.
type userJSON struct {
	Email              string    `json:"email"`
	Name               string    `json:"name"`
	Tier               core.Tier `json:"tier"`
	Role               core.Role `json:"role"`
	SubmissionsPerHour *int      `json:"submissions_per_hour"`
	WebPassword        bool      `json:"web_password"`
	CreatedAt          time.Time `json:"created_at"`
}

// tokenJSON is a token as `token list --json` prints it: never the token.
type tokenJSON struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Hint       string     `json:"hint"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

func userListCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list [--json]",
		Short: "List users in e-mail order: name, tier, role, hourly limit, web password",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withEnv(cmd, func(e *env) error {
				var users []userJSON
				err := core.NewAccounts(e.store).Users(cmd.Context(), func(u core.User) error {
					users = append(users, userJSON{Email: u.Email, Name: u.Name, Tier: u.Tier, Role: u.Role,
						SubmissionsPerHour: u.SubmissionsPerHour, WebPassword: u.PasswordHash != "", CreatedAt: u.CreatedAt.UTC()})
					return nil
				})
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), users)
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "EMAIL\tNAME\tTIER\tROLE\tLIMIT/H\tWEB\tCREATED")
				for _, u := range users {
					limit := "default"
					if u.SubmissionsPerHour != nil {
						limit = strconv.Itoa(*u.SubmissionsPerHour)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", u.Email, oneLine(u.Name, 40), u.Tier, u.Role, limit,
						map[bool]string{true: "yes", false: "no"}[u.WebPassword], u.CreatedAt.Format(time.RFC3339))
				}
				return w.Flush()
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return c
}

// userAccessCmd is set-tier or set-role: what names the flag, choices its
// values, set the change.
func userAccessCmd(what, choices string, set func(a *core.Accounts, ctx context.Context, email, value string) (core.User, error)) *cobra.Command {
	c := &cobra.Command{
		Use:   "set-" + what + " --email E --" + what + " " + strings.ReplaceAll(choices, ", ", "|"),
		Short: "Change a user's " + what + " (" + choices + "); the daemons apply it within cache.freshness",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			email, _ := cmd.Flags().GetString("email")
			value, _ := cmd.Flags().GetString(what)
			return withEnv(cmd, func(e *env) error {
				u, err := set(core.NewAccounts(e.store), cmd.Context(), email, value)
				if err != nil {
					return friendly(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "user %s: tier %s, role %s\n", u.Email, u.Tier, u.Role)
				return nil
			})
		},
	}
	c.Flags().String("email", "", "the user's e-mail address (required)")
	c.Flags().String(what, "", "the new "+what+": "+choices+" (required)")
	_ = c.MarkFlagRequired("email")
	_ = c.MarkFlagRequired(what)
	return c
}

func tokenListCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list --email E [--json]",
		Short: "List a user's tokens, newest first: name, created, last used, revoked (never the token itself)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			email, _ := cmd.Flags().GetString("email")
			return withEnv(cmd, func(e *env) error {
				_, toks, err := core.NewAccounts(e.store).TokensOf(cmd.Context(), email)
				if err != nil {
					return friendly(err)
				}
				out := make([]tokenJSON, len(toks))
				for i, t := range toks {
					out[i] = tokenJSON{ID: t.ID, Name: t.Name, Hint: "…" + t.Hint, CreatedAt: t.CreatedAt.UTC(), LastUsedAt: utcPtr(t.LastUsedAt), RevokedAt: utcPtr(t.RevokedAt)}
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), out)
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tNAME\tENDS\tCREATED\tLAST USED\tREVOKED")
				for _, t := range out {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, orDash(oneLine(t.Name, 40)), t.Hint, t.CreatedAt.Format(time.RFC3339), stamp(t.LastUsedAt), stamp(t.RevokedAt))
				}
				return w.Flush()
			})
		},
	}
	c.Flags().String("email", "", "the owner's e-mail address (required)")
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	_ = c.MarkFlagRequired("email")
	return c
}

// versionCmd prints the version stamped at build (make build), the commit
// and the Go version.
func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rev, modified := commit, strings.HasSuffix(version, "-dirty")
			if bi, ok := debug.ReadBuildInfo(); ok && rev == "" {
				for _, s := range bi.Settings {
					switch s.Key {
					case "vcs.revision":
						rev = s.Value
					case "vcs.modified":
						modified = s.Value == "true"
					}
				}
			}
			if rev == "" {
				rev = "unknown"
			}
			if modified {
				rev += " (modified)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "threatd %s\ncommit %s\n%s %s/%s\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
