package console

import "net/http"

func (c *Console) dashboard(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "dashboard", page{Title: "Dashboard", User: u})
}
